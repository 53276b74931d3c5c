//! The `ferroscale` binary: parses the command line and runs the chosen command (`ferroscale::cli`).

use std::process::ExitCode;

use ferroscale::cli::{Cli, Command};

/// mimalloc rather than the system allocator: reading a cluster allocates and frees a few small
/// strings and maps per pod, and with glibc's allocator that was about a third of `simulate`'s time on
/// a 100,000-pod dump; mimalloc also hands freed pages back, which keeps `run`'s memory near its model.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit code for bad configuration or flags (as clap uses for usage errors).
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    // No transparent huge pages: where the kernel compacts memory to make them at fault time (THP
    // `defrag` on `madvise`, the default), that compaction was up to 1.9 s of system time in `simulate`
    // on a 500,000-pod dump and varied run to run; 4 KB pages cost 0.5 s there, every time.
    // SAFETY: PR_SET_THP_DISABLE takes integers only and changes no memory of this process.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    let (log, command) = match Cli::load(std::env::args_os()) {
        Ok(loaded) => loaded,
        Err(usage) => usage.exit(),
    };
    log.init();
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
        match command? {
            Command::Serve(flags) => ferroscale::cli::serve::main(flags).await,
            Command::Run(flags) => ferroscale::cli::run::main(flags).await,
            Command::Simulate(flags) => ferroscale::cli::simulate_or_replay(flags),
            Command::Deschedule(flags) => ferroscale::cli::deschedule::main(flags).await,
            Command::Record(flags) => ferroscale::cli::record::main(flags).await,
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
