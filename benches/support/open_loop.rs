//! Open-loop rounds of the load bench: requests are sent on a fixed schedule (rate R: request i at
//! start + i/R) whether or not earlier ones have answered, and each latency is measured from the time the
//! request was *due*, not from when it was sent, so a stalled server shows up in the tail instead of
//! silently slowing the generator down (no coordinated omission).
//!
//! The generator keeps its own cost low, since it shares the machine's CPUs with the server: one thread
//! (a current-thread runtime, so no request wakes a second thread), one HTTP/2 connection (as CA's
//! grpc-go client keeps one), and a timerfd for the schedule. The first second of each rate warms the
//! connection and both processes' allocators up and is not counted.

use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::task::JoinSet;

use super::{connect, fmt_latency, percentile, request, Fixture, Work, MIX};

/// Sent at the round's rate before the counted requests, and not counted.
const WARM_UP: Duration = Duration::from_secs(1);

/// Sends CA's read mix at `rate` requests per second for `secs` seconds (after a second of warm-up) and
/// prints the latency percentiles and each side's CPU per request; returns the number of failed requests.
pub fn round(
    server: &super::Server,
    addr: &str,
    fixture: &Arc<Fixture>,
    rate: u64,
    secs: u64,
) -> usize {
    let ticks = super::clock_ticks_per_second();
    let server_cpu = server.cpu_time(ticks);
    let own_cpu = super::served::cpu_time_of("self", ticks);
    let sent = rate * (secs + WARM_UP.as_secs());
    let errors = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("generator runtime")
                    .block_on(generate(addr, fixture, rate, secs))
            })
            .join()
            .expect("generator thread")
    });
    let server_cpu = server.cpu_time(ticks) - server_cpu;
    let own_cpu = super::served::cpu_time_of("self", ticks) - own_cpu;
    println!(
        "    CPU per request: server {:.1} µs, generator {:.1} µs",
        server_cpu.as_secs_f64() * 1e6 / sent as f64,
        own_cpu.as_secs_f64() * 1e6 / sent as f64,
    );
    errors
}

async fn generate(addr: &str, fixture: &Arc<Fixture>, rate: u64, secs: u64) -> usize {
    let channel = connect(addr).await;
    let warm_up = (rate * WARM_UP.as_secs()) as usize;
    let total = (rate * secs) as usize;
    let work = Arc::new(Work {
        fixture: fixture.clone(),
        mix: &MIX[..],
        next: AtomicUsize::new(0),
        total,
        deadline: Instant::now() + Duration::from_secs(secs * 10),
    });
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let start = Instant::now() + Duration::from_millis(50);
    let mut ticker = Ticker::new(start, interval).expect("create the generator's timerfd");
    let mut tasks = JoinSet::new();
    let mut n = 0;
    while n < warm_up + total {
        let due_now = ticker.wait().await.expect("read the generator's timerfd");
        while n < (warm_up + total).min(due_now) {
            let due = start + interval * n as u32;
            let mut c = channel.clone();
            let w = work.clone();
            let i = n;
            tasks.spawn(async move {
                let s = request(&mut c, &w, i).await;
                (i >= warm_up).then(|| (due.elapsed(), s.latency, s.error))
            });
            n += 1;
        }
    }
    let start = start + interval * warm_up as u32;
    let sent = start.elapsed();
    let mut latencies = Vec::with_capacity(total);
    let mut service = Vec::with_capacity(total);
    let mut errors = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let Some((latency, served, error)) = done.expect("request task") else {
            continue;
        };
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
    // From the send itself: what is left once the generator's own lateness (its thread busy with
    // answers, or not run, when a request falls due) is taken out.
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

/// The schedule's clock: a periodic timerfd that the generator's own runtime waits on.
///
/// tokio's timer wheel rounds every wake-up up to the next millisecond, which at 10k req/s would count
/// up to 1 ms of the generator's own lateness in every latency from the due time. A thread of its own
/// sleeping until each due time is exact, but wakes the runtime's thread once more per request (a
/// cross-CPU wake-up, the dearest part of a request on a VM). The timerfd fires on the kernel's
/// high-resolution timer (no timer slack) and wakes the runtime's epoll directly.
struct Ticker {
    fd: AsyncFd<Timer>,
    start: Instant,
    interval: Duration,
}

/// A timerfd as tokio's `AsyncFd` takes it.
struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl Ticker {
    /// Fires at `start` and every `interval` after.
    fn new(start: Instant, interval: Duration) -> std::io::Result<Ticker> {
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        let first = start
            .saturating_duration_since(Instant::now())
            .max(Duration::from_nanos(1));
        timer.set(
            Expiration::IntervalDelayed(first.into(), interval.into()),
            TimerSetTimeFlags::empty(),
        )?;
        // SAFETY: the descriptor is the timerfd `Timer` owns, open until the AsyncFd drops it.
        let fd = unsafe { AsyncFd::register_with_interest(Timer(timer), Interest::READABLE) }
            .map_err(std::io::Error::from)?;
        Ok(Ticker {
            fd,
            start,
            interval,
        })
    }

    /// Waits for the timer to fire and returns how many requests are due by now (counted from the
    /// clock, so a late wake-up sends every request it missed at once, each still timed from its due
    /// time).
    async fn wait(&mut self) -> std::io::Result<usize> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.try_io(|t| t.get_ref().0.wait().map_err(std::io::Error::from)) {
                Ok(fired) => {
                    fired?;
                    // Read once per expiry, not once more to learn it would block: tokio keeps the
                    // readiness if the timer fired again since this guard was taken.
                    guard.clear_ready();
                    let elapsed = self.start.elapsed();
                    return Ok((elapsed.as_nanos() / self.interval.as_nanos()) as usize + 1);
                }
                Err(_would_block) => continue,
            }
        }
    }
}

/// Measures how late the machine itself wakes a sleeping thread while nothing else runs, and prints it:
/// the floor under the open-loop tails. On a VM a vCPU is sometimes not run for milliseconds, and every
/// request due meanwhile waits that long whatever the server does.
pub fn machine_stalls(length: Duration) {
    let nap = Duration::from_micros(100);
    let mut naps = 0u64;
    let mut late = Vec::new();
    let end = Instant::now() + length;
    while Instant::now() < end {
        let before = Instant::now();
        std::thread::sleep(nap);
        naps += 1;
        let over = before.elapsed().saturating_sub(nap);
        if over > Duration::from_micros(500) {
            late.push(over);
        }
    }
    let over_1ms: Vec<_> = late
        .iter()
        .filter(|d| **d > Duration::from_millis(1))
        .collect();
    println!(
        "machine alone: a thread sleeping 100 µs {naps} times in {} s woke over 0.5 ms late {} times, \
         over 1 ms {} times ({:.1}/s, {:.1} ms in all), longest {}",
        length.as_secs(),
        late.len(),
        over_1ms.len(),
        over_1ms.len() as f64 / length.as_secs_f64(),
        over_1ms.iter().map(|d| d.as_secs_f64() * 1e3).sum::<f64>(),
        fmt_latency(late.iter().copied().max().unwrap_or_default()),
    );
}
