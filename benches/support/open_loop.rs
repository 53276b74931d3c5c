//! Open-loop rounds of the load bench: requests are sent on a fixed schedule (rate R: request i at
//! start + i/R) whether or not earlier ones have answered, and each latency is measured from the time the
//! request was *due*, not from when it was sent, so a stalled server shows up in the tail instead of
//! silently slowing the generator down (no coordinated omission).

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::{connect, fmt_latency, percentile, request, Fixture, Work, MIX};

/// HTTP/2 channels the requests are spread over (many streams each), like a few CA replicas' clients.
const CHANNELS: usize = 8;

/// Sends CA's read mix at `rate` requests per second for `secs` seconds and prints the latency
/// percentiles; returns the number of failed requests.
pub async fn round(addr: &str, fixture: &Arc<Fixture>, rate: u64, secs: u64) -> usize {
    let mut channels = Vec::with_capacity(CHANNELS);
    for _ in 0..CHANNELS {
        channels.push(connect(addr).await);
    }
    let total = (rate * secs) as usize;
    let work = Arc::new(Work {
        fixture: fixture.clone(),
        mix: &MIX[..],
        next: AtomicUsize::new(0),
        total,
        deadline: Instant::now() + Duration::from_secs(secs * 10),
    });
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    // The schedule is kept by a thread of its own that sleeps with the OS's timer (tens of
    // microseconds late at worst) instead of tokio's, whose timer wheel rounds every wake-up up to the
    // next millisecond: that lateness counted in every latency from the due time and made up most of the
    // p99 at 10k req/s. Each request still counts from when it was due.
    let start = Instant::now() + Duration::from_millis(50);
    let (due_tx, mut due_rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let pacer = std::thread::spawn(move || {
        for n in 0..total {
            let due = start + interval * n as u32;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if due_tx.send((n, due)).is_err() {
                break;
            }
        }
    });
    let mut tasks = JoinSet::new();
    while let Some((n, due)) = due_rx.recv().await {
        let mut c = channels[n % CHANNELS].clone();
        let w = work.clone();
        tasks.spawn(async move {
            let s = request(&mut c, &w, n).await;
            (due.elapsed(), s.latency, s.error)
        });
    }
    pacer.join().expect("the pacer thread");
    let sent = start.elapsed();
    let mut latencies = Vec::with_capacity(total);
    let mut service = Vec::with_capacity(total);
    let mut errors = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let (latency, served, error) = done.expect("request task");
        latencies.push(latency);
        service.push(served);
        errors.extend(error);
    }
    latencies.sort_unstable();
    service.sort_unstable();
    println!(
        "open loop {rate:>6} req/s for {secs} s: {total:>6} requests (sent in {:.2} s), {:>3} errors, \
         p50 {:>7}, p99 {:>7}, p99.9 {:>7}, max {:>8}",
        sent.as_secs_f64(),
        errors.len(),
        fmt_latency(percentile(&latencies, 0.50)),
        fmt_latency(percentile(&latencies, 0.99)),
        fmt_latency(percentile(&latencies, 0.999)),
        fmt_latency(percentile(&latencies, 1.0)),
    );
    // From the send itself: what is left once the generator's own lateness (its timer wakes up to a
    // millisecond after a request is due) is taken out.
    println!(
        "    from the send: p50 {:>7}, p99 {:>7}, p99.9 {:>7}",
        fmt_latency(percentile(&service, 0.50)),
        fmt_latency(percentile(&service, 0.99)),
        fmt_latency(percentile(&service, 0.999)),
    );
    if let Some(first) = errors.first() {
        println!("    first error: {first}");
    }
    errors.len()
}
