//! AWS calls per cluster-autoscaler loop and refresh latency at scale: 500 Auto Scaling groups with
//! 5,000 instances in moto (started here on 127.0.0.1 from `.venv`, as `scripts/test.sh` installs it), read
//! through the real SDK clients. Prints the figures; `FERROSCALE_BENCH_ASGS` changes the group count.

#[path = "support/moto.rs"]
mod moto;

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_autoscaling::types::{LaunchTemplateSpecification, Tag};
use ferroscale::cloud::aws::discovery::TagDiscovery;
use ferroscale::cloud::aws::{AwsCloud, AwsSettings};
use ferroscale::cloud::Cloud;

const INSTANCES_PER_GROUP: i32 = 10;
const TYPES: [&str; 5] = [
    "m5.large",
    "c5.xlarge",
    "r5.large",
    "m6g.large",
    "g4dn.xlarge",
];

#[tokio::main]
async fn main() {
    let groups: usize = std::env::var("FERROSCALE_BENCH_ASGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    for (k, v) in [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ] {
        std::env::set_var(k, v);
    }
    let (mut child, url) = moto::start();
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(&url)
        .load()
        .await;
    let asg = aws_sdk_autoscaling::Client::new(&config);
    let ec2 = aws_sdk_ec2::Client::new(&config);

    let started = Instant::now();
    let mut templates = Vec::new();
    for t in TYPES {
        let out = ec2
            .create_launch_template()
            .launch_template_name(format!("bench-{}", t.replace('.', "-")))
            .launch_template_data(
                aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
                    .image_id("ami-12c6146b")
                    .instance_type(t.into())
                    .build(),
            )
            .send()
            .await
            .unwrap();
        templates.push(
            out.launch_template()
                .unwrap()
                .launch_template_id()
                .unwrap()
                .to_string(),
        );
    }
    let templates = Arc::new(templates);
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let (asg, templates) = (asg.clone(), templates.clone());
        tasks.push(tokio::spawn(async move {
            for i in (worker..groups).step_by(8) {
                let name = format!("bench-{i:03}");
                asg.create_auto_scaling_group()
                    .auto_scaling_group_name(&name)
                    .launch_template(
                        LaunchTemplateSpecification::builder()
                            .launch_template_id(&templates[i % templates.len()])
                            .version("$Default")
                            .build(),
                    )
                    .min_size(0)
                    .max_size(50)
                    .desired_capacity(INSTANCES_PER_GROUP)
                    .availability_zones("us-east-1a")
                    .tags(
                        Tag::builder()
                            .resource_id(&name)
                            .resource_type("auto-scaling-group")
                            .key("k8s.io/cluster-autoscaler/enabled")
                            .value("true")
                            .build(),
                    )
                    .send()
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    println!(
        "setup: {groups} ASGs × {INSTANCES_PER_GROUP} instances in moto in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let settings = |interval| AwsSettings {
        region: Some("us-east-1".into()),
        auto_discovery: vec![
            TagDiscovery::parse("asg:tag=k8s.io/cluster-autoscaler/enabled").unwrap(),
        ],
        nodes: vec![],
        refresh_interval: interval,
        endpoint_url: Some(url.clone()),
        max_attempts: None,
        pricing: Default::default(),
    };

    // Cold: the first snapshot (groups, launch templates, instance types).
    let t = Instant::now();
    let cold = AwsCloud::connect(settings(Duration::ZERO), Default::default())
        .await
        .unwrap();
    let cold_time = t.elapsed();
    let s = cold.snapshot();
    println!(
        "cold refresh: {:.0} ms, {} AWS calls, {} groups, {} instances",
        cold_time.as_secs_f64() * 1e3,
        cold.aws_calls(),
        s.groups().count(),
        s.instance_count()
    );
    // Warm: caches for launch templates and instance types are filled.
    let mut times = Vec::new();
    let mut calls = Vec::new();
    for _ in 0..5 {
        let before = cold.aws_calls();
        let t = Instant::now();
        cold.refresh().await.unwrap();
        times.push(t.elapsed());
        calls.push(cold.aws_calls() - before);
    }
    times.sort();
    println!(
        "warm refresh: median {:.0} ms (min {:.0}, max {:.0}), {} AWS calls each",
        times[2].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[4].as_secs_f64() * 1e3,
        calls[2]
    );

    // CA loops: Refresh plus the reads CA makes for every group, every 10 s, with the default 60 s interval.
    let cloud = AwsCloud::connect(settings(Duration::from_secs(60)), Default::default())
        .await
        .unwrap();
    let before = cloud.aws_calls();
    let loops = 30;
    let t = Instant::now();
    for _ in 0..loops {
        cloud.refresh().await.unwrap();
        let s = cloud.snapshot();
        for g in s.groups() {
            let _ = (g.target_size, g.instances_with_placeholders(), &g.template);
        }
    }
    println!(
        "CA loops between refreshes: {loops} loops, {} AWS calls ({:.2} per loop), {:.2} ms per loop",
        cloud.aws_calls() - before,
        (cloud.aws_calls() - before) as f64 / loops as f64,
        t.elapsed().as_secs_f64() * 1e3 / loops as f64
    );
    println!(
        "steady state at the default 60 s interval and 10 s CA loops: {:.1} AWS calls per loop",
        calls[2] as f64 / 6.0
    );
    let _ = child.kill();
    let _ = child.wait();
}
