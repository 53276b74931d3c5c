//! Integration tests: one module per behaviour, all in one binary so the suite builds once. Every test
//! talks to a real server over a loopback socket: tonic's generated client, moto, or the Kubernetes API
//! of `kube_api`.

mod abuse;
mod aws_discovery;
mod aws_faults;
mod aws_pricing;
mod aws_proxy;
mod aws_safety;
mod aws_scaling;
mod aws_templates;
mod chart;
mod chart_policy;
mod chart_security;
mod cli;
mod common;
mod concurrency;
mod expander;
mod instances;
mod kube_api;
mod layout;
mod lease;
mod misc;
mod moto;
mod node_groups;
mod options;
mod pki;
mod pricing;
mod process;
mod props;
mod resize;
mod run;
mod run_aws;
mod run_leadership;
mod run_owners;
mod run_priorities;
mod run_safety;
mod run_volumes;
mod simulate;
mod simulate_drain;
mod simulate_example;
mod simulate_limits;
mod simulate_templates;
mod simulate_utilization;
mod simulate_volumes;
mod template;
mod tls;
