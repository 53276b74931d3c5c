//! A child process run to its end with its wall time and peak RSS (the child's own `ru_maxrss`, from
//! `wait4`): how the command benches (`read_dump`, `replay`) time the binary as a user runs it.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` (its output dropped) to its end; its wall time and peak RSS in MB. Panics when it
/// fails.
// The child is waited for with `wait4` (which `Child::wait` does not offer), for its own rusage.
#[allow(clippy::zombie_processes)]
pub fn measured(command: &mut Command) -> (Duration, f64) {
    let start = Instant::now();
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the ferroscale binary");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, once; both pointers are to live locals.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let took = start.elapsed();
    assert_eq!(
        pid,
        child.id() as i32,
        "wait4: {}",
        std::io::Error::last_os_error()
    );
    let exit = ExitStatus::from_raw(status);
    assert!(exit.success(), "ferroscale failed: {exit}");
    (took, usage.ru_maxrss as f64 / 1000.0)
}
