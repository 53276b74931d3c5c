//! What the test modules share; no test lives here. One line per helper.

/// A fault-injecting proxy in front of moto: failed launches, unfulfilled capacity, throttling.
pub mod aws_proxy;
/// The Helm chart rendered by Helm's Go SDK, its objects parsed as their kinds and found by name.
pub mod chart;
/// Objects as CA sends them (`grpc`), as the API serves them (`kube`), as dumps hold them (`dump`).
pub mod fixtures;
/// A cloud that stops `run` at a chosen step (the kill matrix): a scale-up or a delete never returns.
pub mod gated;
/// A Kubernetes API on loopback for `run`: list/watch, patches, PDB evictions, requests recorded.
pub mod kube_api;
/// A moto server (AWS emulator) per test, reached through the real aws-sdk clients.
pub mod moto;
/// Certificates made per test with rcgen (CA, server, clients), also written to a temporary folder.
pub mod pki;
/// The ferroscale binary as a child process, its addresses read from its "serving" log line, or run to
/// its end with its memory limited.
pub mod process;
/// The kill matrix's site: `run` started, killed and restarted on one API server and cloud.
pub mod restart;
/// `run`'s `Runner` against the loopback API on a memory cloud (`Harness`), and its settings.
pub mod run_harness;
/// `serve` on loopback sockets, in-process on a memory cloud (`TestServer`), and an HTTP GET.
pub mod server;
/// `simulate`'s `Simulation` in-process on a dump, its settings and pacing, and report lookups.
pub mod simulate_harness;
/// `simulate` and `run` side by side on one scenario, loop by loop.
pub mod twin;
