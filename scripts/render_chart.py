#!/usr/bin/env python3
"""Renders a Helm chart with Helm's own Go SDK (helm-python-sdk, from PyPI; no helm binary needed).

usage: render_chart.py [--notes] CHART [VALUES.yaml] [--set K=V ...] -> JSON list of the rendered objects on stdout
(with --notes: the rendered NOTES.txt instead); values that values.schema.json rejects, or a template error, exit 1
with Helm's message on stderr.
"""
import json
import sys

import helm_python as helm
import yaml


def _deep(base, extra):
    """Merges nested --set values into the values so far."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = _deep(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def main() -> int:
    args = sys.argv[1:]
    notes = args[0] == "--notes"
    if notes:
        args = args[1:]
    chart_dir, rest = args[0], args[1:]
    values = {}
    if rest and rest[0] != "--set":
        with open(rest.pop(0)) as f:
            values = yaml.safe_load(f) or {}
    sets = [rest[i + 1] for i in range(len(rest) - 1) if rest[i] == "--set"]
    with helm.Chart.load(chart_dir) as chart:
        try:
            for s in sets:  # helm's own --set parser, then helm's own merge
                values = chart.merge_values({**values, **_deep(values, helm.parse_set_string(s))})
            chart.validate_schema(values)
            manifests = chart.render(values, name="fs", namespace="autoscaling")
        except Exception as e:  # Helm's error names the template or the values field
            print(e, file=sys.stderr)
            return 1
    if notes:
        sys.stdout.write(next((text for name, text in manifests.items() if name.endswith("/NOTES.txt")), ""))
        return 0
    objects = []
    for name in sorted(manifests):
        if not name.endswith((".yaml", ".yml")):
            continue
        for doc in yaml.safe_load_all(manifests[name]):
            if doc:
                objects.append({"template": name, "object": doc})
    json.dump(objects, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
