//! The `ferroscale` binary: parses the command line and runs the chosen command.

use std::process::ExitCode;
use std::sync::{Arc, RwLock};

use clap::Parser;
use ferroscale::cli::{Cli, Command, RunArgs, ServeArgs, SimulateArgs};
use ferroscale::grpc::expander::{watch_priority_file, ExpanderSettings};
use ferroscale::metrics::Metrics;
use ferroscale::tls::ReloadingTls;
use ferroscale::Error;
use tracing_subscriber::EnvFilter;

/// How often the priority file is checked for changes.
const PRIORITY_FILE_POLL: std::time::Duration = std::time::Duration::from_secs(5);

/// How often TLS certificate files are checked for changes (rotation without a restart).
const TLS_FILE_POLL: std::time::Duration = std::time::Duration::from_secs(10);

/// Exit code for bad configuration or flags (as clap uses for usage errors).
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await,
            Command::Run(args) => run(args).await,
            Command::Simulate(args) => simulate(args),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            if e.is_config() {
                ExitCode::from(EXIT_CONFIG)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

async fn serve(args: ServeArgs) -> ferroscale::Result<()> {
    let settings = args.resolve()?;
    // Certificates are read before anything starts, so a bad one stops start-up naming its flag.
    let load_tls = |files: &Option<ferroscale::tls::TlsFiles>, flags| match files {
        Some(files) => {
            let tls = ReloadingTls::load(files.clone(), flags)?;
            tls.watch(TLS_FILE_POLL);
            Ok::<_, Error>(Some(tls))
        }
        None => Ok(None),
    };
    let grpc_tls = load_tls(&settings.tls, &ferroscale::tls::PROVIDER_FLAGS)?;
    let expander_tls = load_tls(&settings.expander_tls, &ferroscale::tls::EXPANDER_FLAGS)?;
    let metrics = Arc::new(Metrics::default());
    let cloud = settings.build_cloud(metrics.clone()).await?;
    let bind = |addr| async move {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Io {
                context: format!("binding {addr}"),
                source,
            })
    };
    let listeners = ferroscale::server::Listeners {
        grpc: bind(settings.listen).await?,
        http: bind(settings.http_listen).await?,
        expander: match settings.expander_listen {
            Some(addr) => {
                let expander = Arc::new(ExpanderSettings {
                    chain: settings.expander_chain.clone(),
                    priorities: RwLock::new(settings.priorities.clone()),
                });
                if let Some(path) = &settings.priority_config {
                    watch_priority_file(path.clone(), expander.clone(), PRIORITY_FILE_POLL);
                }
                Some((bind(addr).await?, expander))
            }
            None => None,
        },
        grpc_tls,
        expander_tls,
    };
    ferroscale::server::serve(
        cloud,
        metrics,
        listeners,
        ferroscale::server::termination_signal(),
        settings.shutdown_grace_period,
    )
    .await
}

/// How long `run` waits for the first lists of pods, nodes, PDBs and DaemonSets.
const INITIAL_SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// This replica's name: the pod's host name plus a suffix unique to this start, as client-go does.
fn identity() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "ferroscale".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ std::process::id())
        .unwrap_or_default();
    format!("{host}_{nanos:08x}")
}

async fn run(args: RunArgs) -> ferroscale::Result<()> {
    let settings = args.engine.settings()?;
    let identity = identity();
    let run_settings = args.run_settings(&identity)?;
    let metrics = Arc::new(Metrics::for_run());
    let cloud = args.cloud_settings()?.build_cloud(metrics.clone()).await?;
    let client = args.client().await?;
    let health = Arc::new(ferroscale::run::Health::new(
        run_settings.max_inactivity,
        run_settings.max_failing_time,
    ));
    let listener = tokio::net::TcpListener::bind(args.address)
        .await
        .map_err(|source| Error::Io {
            context: format!("binding --address {}", args.address),
            source,
        })?;
    tracing::info!(http = ?listener.local_addr().ok(), cloud = cloud.name(), "serving");
    let check = health.clone();
    let router = ferroscale::http::run_router(
        cloud.clone(),
        metrics.clone(),
        Arc::new(move || check.check(ferroscale::time::unix_now())),
    );
    tokio::spawn(async move {
        if let Err(e) = ferroscale::http::serve(listener, router, std::future::pending()).await {
            tracing::error!(error = %e, "HTTP listener stopped");
        }
    });
    let watches = ferroscale::k8s::watch::Watches::start(&client);
    watches
        .ready(tokio::time::sleep(INITIAL_SYNC_TIMEOUT))
        .await?;
    tracing::info!(
        identity,
        dry_run = run_settings.dry_run,
        "watching the cluster"
    );
    ferroscale::run::Runner::new(
        cloud,
        client,
        watches,
        settings,
        run_settings,
        metrics,
        health,
    )
    .run(ferroscale::server::termination_signal())
    .await
}

fn simulate(args: SimulateArgs) -> ferroscale::Result<()> {
    let read = |path: &std::path::Path, flag: &str| {
        std::fs::read_to_string(path)
            .map_err(|e| Error::config(format!("cannot read {flag} {}: {e}", path.display())))
    };
    let objects = ferroscale::k8s::documents::parse(
        &read(&args.cluster, "--cluster")?,
        &args.cluster.display().to_string(),
    )?;
    let groups = ferroscale::cloud::memory::MemoryConfig::load(&args.node_groups)?;
    let settings = args.engine.settings()?;
    let mut sim =
        ferroscale::simulate::Simulation::new(&objects, &groups, &args.engine.price_overrides()?)?;
    let pacing = ferroscale::simulate::Pacing {
        loops: args.loops,
        scan_interval: args.scan_interval,
        provision_delay: args.provision_delay,
    };
    for _ in 0..pacing.loops {
        let report = sim.step(&settings, &pacing);
        let line = serde_json::to_string(&report).map_err(|e| Error::Io {
            context: "writing the report".into(),
            source: std::io::Error::other(e),
        })?;
        println!("{line}");
        eprintln!("{}", ferroscale::simulate::summary(&report));
    }
    Ok(())
}
