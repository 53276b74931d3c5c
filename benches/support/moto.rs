//! moto (the AWS API emulator) on 127.0.0.1 port 0, its address read from its start-up line, so the
//! bench never guesses a free port. `FERROSCALE_MOTO_SERVER` may point at another `moto_server`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Starts moto; returns the process and its URL.
pub fn start() -> (Child, String) {
    let moto = std::env::var("FERROSCALE_MOTO_SERVER")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/moto_server").into());
    let mut child = Command::new(&moto)
        .args(["-H", "127.0.0.1", "-p", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{moto}: {e} (run scripts/test.sh once to install moto)"));
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("moto exited at start")
            .expect("read stderr");
        if let Some(url) = line.split("Running on ").nth(1) {
            break url.trim().to_string();
        }
    };
    // moto logs every request: keep reading so it never stalls on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}
