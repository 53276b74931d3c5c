//! The depth pre-scans: one linear pass over the bytes, stopping at the first line that nests deeper
//! than the limit. The YAML scan over-counts rather than under-counts (the node after a sequence
//! entry's `- ` is a level at its column, even a scalar, and so is any deeper indentation; a sequence
//! without indentation under a key is a level at the key's column): it only has to bound what the
//! parser would build. It never starts a quoted scalar where the parser would not (a quote starts one
//! only where a node starts), so no bracket the parser counts is hidden from it.

/// The first line (1-based) at which JSON `text` nests deeper than `max`, if any.
pub(super) fn json_over(text: &[u8], max: usize) -> Option<usize> {
    let (mut depth, mut line, mut in_string, mut escaped) = (0usize, 1usize, false, false);
    for &b in text {
        if b == b'\n' {
            line += 1;
        }
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Where a YAML line's scan is, between lines.
#[derive(Default)]
struct Yaml {
    /// Each open block level: its column, and whether it is a sequence (one without indentation
    /// shares its mapping's column: `key:` then `- item` under it is two levels at one column).
    indents: Vec<(usize, bool)>,
    /// Open flow collections, and the block depth they opened at.
    flow: usize,
    flow_base: usize,
    /// In flow context: the next token starts a node (after `[`, `{`, `,` or a value's `:`).
    expect_node: bool,
    /// An open quoted scalar (its quote byte), which may go on over lines.
    quote: Option<u8>,
    /// In a block scalar whose parent collection starts at this column; its content is the lines
    /// indented more, and blank ones.
    block_scalar: Option<usize>,
}

fn blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

/// The first line (1-based) at which YAML `text` nests deeper than `max`, if any.
pub(super) fn yaml_over(text: &[u8], max: usize) -> Option<usize> {
    let mut s = Yaml::default();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if s.line(line, max) {
            return Some(i + 1);
        }
    }
    None
}

impl Yaml {
    /// Scans one line; true when it nests deeper than `max`.
    fn line(&mut self, line: &[u8], max: usize) -> bool {
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let rest = &line[indent..];
        let is_blank = rest.iter().all(|&b| blank(b));
        if let Some(parent) = self.block_scalar {
            if is_blank || indent > parent {
                return false;
            }
            self.block_scalar = None;
        }
        if self.quote.is_some() || self.flow > 0 {
            return self.inline(line, 0, indent, self.indents.len(), max);
        }
        if is_blank || rest[0] == b'#' {
            return false;
        }
        if indent == 0 && rest[0] == b'%' {
            return false;
        }
        if indent == 0 && (rest.starts_with(b"---") || rest.starts_with(b"...")) {
            self.indents.clear();
            if rest.len() > 3 && !blank(rest[3]) {
                // `---x` is a plain scalar, not a document marker.
            } else {
                return self.node(line, 3, 0, 0, max);
            }
        }
        while self.indents.last().is_some_and(|&(top, _)| top > indent) {
            self.indents.pop();
        }
        let entry = rest[0] == b'-' && rest.get(1).is_none_or(|&n| blank(n));
        match self.indents.last().copied() {
            Some((top, seq)) if top == indent => {
                let under = self.indents.len().checked_sub(2).map(|i| self.indents[i].0);
                if entry && !seq {
                    self.indents.push((indent, true));
                } else if !entry && seq && under == Some(indent) {
                    // A key after a sequence without indentation: the sequence has ended.
                    self.indents.pop();
                }
            }
            _ => self.indents.push((indent, entry)),
        }
        let depth = self.indents.len();
        if depth > max {
            return true;
        }
        self.node(line, indent, indent, depth, max)
    }

    /// Scans block context from `pos`, where a node starts, at block depth `depth`; `indent` is the
    /// line's.
    fn node(
        &mut self,
        line: &[u8],
        mut pos: usize,
        indent: usize,
        mut depth: usize,
        max: usize,
    ) -> bool {
        let mut at_node = true;
        // Where the innermost block collection on the line starts (a block scalar's parent).
        let mut column = indent;
        while pos < line.len() {
            let b = line[pos];
            if blank(b) {
                pos += 1;
                continue;
            }
            let next_blank = line.get(pos + 1).is_none_or(|&n| blank(n));
            if at_node {
                match b {
                    b'-' | b'?' | b':' if next_blank => {
                        // The entry's node starts at the next column that is no blank: a block
                        // level there, for the lines indented under it.
                        column = pos;
                        pos += 1;
                        while pos < line.len() && blank(line[pos]) {
                            pos += 1;
                        }
                        if pos < line.len() && self.indents.last().is_none_or(|&(top, _)| top < pos)
                        {
                            let entry =
                                line[pos] == b'-' && line.get(pos + 1).is_none_or(|&n| blank(n));
                            self.indents.push((pos, entry));
                        }
                        depth = (depth + 1).max(self.indents.len());
                        if depth > max {
                            return true;
                        }
                    }
                    b'[' | b'{' => {
                        self.flow_base = depth;
                        return self.inline(line, pos, indent, depth, max);
                    }
                    b'"' | b'\'' => {
                        self.quote = Some(b);
                        column = pos;
                        return self.inline(line, pos + 1, column, depth, max);
                    }
                    b'|' | b'>' => {
                        self.block_scalar = Some(column);
                        return false;
                    }
                    b'#' => return false,
                    b'&' | b'!' => {
                        while pos < line.len() && !blank(line[pos]) {
                            pos += 1;
                        }
                    }
                    _ => {
                        column = pos;
                        at_node = false;
                    }
                }
                continue;
            }
            match b {
                b':' if next_blank => at_node = true,
                b'#' if pos > 0 && blank(line[pos - 1]) => return false,
                _ => {}
            }
            pos += 1;
        }
        false
    }

    /// Scans flow context (or a quoted scalar) from `pos`, the flow collections opening at block
    /// depth `self.flow_base`; back in block context (after the line's last flow collection closes),
    /// goes on at block depth `depth`.
    fn inline(
        &mut self,
        line: &[u8],
        mut pos: usize,
        indent: usize,
        depth: usize,
        max: usize,
    ) -> bool {
        let mut after_quote = false;
        while pos < line.len() {
            let b = line[pos];
            if let Some(q) = self.quote {
                match b {
                    b'\\' if q == b'"' => pos += 1,
                    b'\'' if q == b'\'' && line.get(pos + 1) == Some(&b'\'') => pos += 1,
                    _ if b == q => {
                        self.quote = None;
                        after_quote = true;
                        if self.flow == 0 {
                            return self.after_flow(line, pos + 1, indent, depth, max);
                        }
                    }
                    _ => {}
                }
                pos += 1;
                continue;
            }
            let quoted_before = std::mem::take(&mut after_quote);
            match b {
                b' ' | b'\t' | b'\r' => {
                    after_quote = quoted_before;
                }
                b'#' if pos == 0 || blank(line[pos - 1]) => return false,
                b'"' | b'\'' if self.expect_node => self.quote = Some(b),
                b'[' | b'{' => {
                    self.flow += 1;
                    self.expect_node = true;
                    if self.flow_base + self.flow > max {
                        return true;
                    }
                }
                b']' | b'}' => {
                    self.flow = self.flow.saturating_sub(1);
                    self.expect_node = false;
                    if self.flow == 0 {
                        return self.after_flow(line, pos + 1, indent, depth, max);
                    }
                }
                b',' => self.expect_node = true,
                b'?' if line.get(pos + 1).is_none_or(|&n| blank(n)) => self.expect_node = true,
                b':' => {
                    let next = line.get(pos + 1).copied();
                    let ends = next.is_none_or(|n| blank(n) || b",[]{}".contains(&n));
                    self.expect_node = ends || quoted_before;
                }
                b'&' | b'!' if self.expect_node => {
                    while pos + 1 < line.len()
                        && !blank(line[pos + 1])
                        && !b",[]{}".contains(&line[pos + 1])
                    {
                        pos += 1;
                    }
                }
                _ => self.expect_node = false,
            }
            pos += 1;
        }
        false
    }

    /// The rest of a block line after a flow collection or quoted scalar closed: a node may follow a
    /// `: ` there.
    fn after_flow(
        &mut self,
        line: &[u8],
        mut pos: usize,
        indent: usize,
        depth: usize,
        max: usize,
    ) -> bool {
        while pos < line.len() {
            let b = line[pos];
            let next_blank = line.get(pos + 1).is_none_or(|&n| blank(n));
            match b {
                b':' if next_blank => return self.node(line, pos + 1, indent, depth, max),
                b'#' if pos > 0 && blank(line[pos - 1]) => return false,
                _ => {}
            }
            pos += 1;
        }
        false
    }
}
