//! Integration tests: one module per behaviour, all in one binary so the suite builds once. Every test
//! talks to a real server over a loopback socket with tonic's generated client.

mod aws_discovery;
mod aws_faults;
mod aws_pricing;
mod aws_proxy;
mod aws_scaling;
mod aws_templates;
mod cli;
mod common;
mod concurrency;
mod expander;
mod instances;
mod misc;
mod moto;
mod node_groups;
mod options;
mod pki;
mod pricing;
mod resize;
mod simulate;
mod template;
mod tls;
