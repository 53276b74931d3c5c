//! A budget of request bytes in flight on one gRPC service, taken before tonic buffers and decodes a
//! request: each request's gRPC frame header declares its message length, which is reserved from the
//! budget as soon as those 5 bytes arrive and held until the answer is ready. A request that does not
//! fit is answered RESOURCE_EXHAUSTED at once, its body never read. Without it, the expander's 256
//! concurrent requests of up to 128 MiB each would all be buffered and decoded before any limit (a
//! 512 Mi pod runs out of memory, and the CloudProvider service with it).

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::StreamExt;
use tokio::sync::Semaphore;
use tonic::body::Body;
use tonic::codegen::{http, BoxFuture, Bytes, Service};
use tonic::server::NamedService;

use super::status;
use crate::error::Error;
use crate::metrics::Metrics;

/// Budget granularity: permits are KiB, so a budget of gibibytes fits a semaphore's u32 acquisitions.
const UNIT: usize = 1024;

/// A gRPC message's frame header: a compression flag and the message length (big-endian u32).
const FRAME_HEADER: usize = 5;

/// A tonic service behind a byte budget (see the module's documentation).
#[derive(Clone)]
pub struct ByteBudget<S> {
    inner: S,
    budget: Arc<Semaphore>,
    bytes: usize,
    metrics: Arc<Metrics>,
    service: &'static str,
    method: &'static str,
}

impl<S> ByteBudget<S> {
    /// `inner` admitting at most `bytes` of request messages at once; refusals are counted as
    /// `service`/`method` answers RESOURCE_EXHAUSTED in the gRPC metrics.
    pub fn new(
        inner: S,
        bytes: usize,
        metrics: Arc<Metrics>,
        service: &'static str,
        method: &'static str,
    ) -> Self {
        ByteBudget {
            inner,
            budget: Arc::new(Semaphore::new(bytes.div_ceil(UNIT))),
            bytes,
            metrics,
            service,
            method,
        }
    }
}

impl<S: NamedService> NamedService for ByteBudget<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for ByteBudget<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        // The clone is the one polled ready: it goes into the future, a fresh clone stays.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let me = self.clone();
        Box::pin(async move {
            let started = Instant::now();
            let (parts, body) = req.into_parts();
            let mut data = axum::body::Body::new(body).into_data_stream();
            // Read only as far as the frame header.
            let mut read: Vec<Result<Bytes, axum::Error>> = Vec::new();
            let mut head = Vec::with_capacity(FRAME_HEADER);
            while head.len() < FRAME_HEADER {
                match data.next().await {
                    Some(Ok(chunk)) => {
                        let want = FRAME_HEADER - head.len();
                        head.extend_from_slice(&chunk[..want.min(chunk.len())]);
                        read.push(Ok(chunk));
                    }
                    Some(Err(e)) => {
                        read.push(Err(e));
                        break;
                    }
                    None => break,
                }
            }
            let declared = match head[..] {
                [_, a, b, c, d] => u32::from_be_bytes([a, b, c, d]) as usize,
                _ => 0,
            };
            // Longer than the whole budget: over the service's message limit too, which tonic refuses
            // from the header alone, without buffering it.
            let units = (declared + FRAME_HEADER).div_ceil(UNIT);
            let permit = if declared > me.bytes {
                None
            } else {
                match me.budget.clone().try_acquire_many_owned(units as u32) {
                    Ok(p) => Some(p),
                    Err(_) => return Ok(me.refuse(declared, started)),
                }
            };
            let body = axum::body::Body::from_stream(futures::stream::iter(read).chain(data));
            let answer = inner
                .call(http::Request::from_parts(parts, Body::new(body)))
                .await;
            drop(permit);
            answer
        })
    }
}

impl<S> ByteBudget<S> {
    /// RESOURCE_EXHAUSTED for a request of `declared` bytes, counted and logged.
    fn refuse(&self, declared: usize, started: Instant) -> http::Response<Body> {
        let err = Error::Overloaded {
            what: format!("{}/{}", self.service, self.method),
            bytes: declared,
            budget: self.bytes,
        };
        let s = status::to_status(&err);
        tracing::warn!(method = self.method, code = ?s.code(), error = %err, "request refused");
        self.metrics.rpc_started(self.service, self.method);
        self.metrics.rpc_handled(
            self.service,
            self.method,
            status::code_name(s.code()),
            started.elapsed(),
        );
        s.into_http()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::channel::mpsc;
    use futures::FutureExt;

    /// Reads the whole request body, as tonic's decoder does, and answers OK.
    #[derive(Clone)]
    struct ReadsAll;

    impl Service<http::Request<Body>> for ReadsAll {
        type Response = http::Response<Body>;
        type Error = Infallible;
        type Future = BoxFuture<Self::Response, Self::Error>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: http::Request<Body>) -> Self::Future {
            Box::pin(async move {
                let body = axum::body::Body::new(req.into_body());
                axum::body::to_bytes(body, usize::MAX).await.unwrap();
                Ok(http::Response::new(Body::empty()))
            })
        }
    }

    type Sender = mpsc::UnboundedSender<Result<Bytes, Infallible>>;

    /// A request whose body is sent through the returned channel, starting with a frame header that
    /// declares `declared` bytes.
    fn request(declared: u32) -> (http::Request<Body>, Sender) {
        let (tx, rx) = mpsc::unbounded();
        let mut head = vec![0u8];
        head.extend_from_slice(&declared.to_be_bytes());
        tx.unbounded_send(Ok(Bytes::from(head))).unwrap();
        let body = Body::new(axum::body::Body::from_stream(rx));
        (http::Request::new(body), tx)
    }

    fn grpc_status(r: &http::Response<Body>) -> Option<&str> {
        r.headers().get("grpc-status").map(|v| v.to_str().unwrap())
    }

    #[tokio::test]
    async fn a_request_past_the_budget_is_refused_before_its_body_is_read() {
        let metrics = Arc::new(Metrics::default());
        let mut svc = ByteBudget::new(ReadsAll, 1 << 20, metrics.clone(), "s", "M");
        // 800 KiB declared, its body still arriving: the budget holds it.
        let (first, first_body) = request(800 << 10);
        let mut pending = svc.call(first);
        assert!((&mut pending).now_or_never().is_none(), "still reading");
        // 300 KiB more do not fit: refused at once, without waiting for the first.
        let (second, second_body) = request(300 << 10);
        let refused = svc.call(second).await.unwrap();
        assert_eq!(grpc_status(&refused), Some("8"), "RESOURCE_EXHAUSTED");
        assert!(second_body.is_closed(), "its body is dropped unread");
        assert!(metrics.encode().contains(
            "grpc_server_handled_total{grpc_type=\"unary\",grpc_service=\"s\",grpc_method=\"M\",grpc_code=\"ResourceExhausted\"} 1"
        ), "{}", metrics.encode());
        // Smaller ones fit beside it.
        let (small, small_body) = request(100 << 10);
        drop(small_body);
        assert_eq!(grpc_status(&svc.call(small).await.unwrap()), None);
        // The first one answered, its bytes are free again.
        first_body
            .unbounded_send(Ok(Bytes::from(vec![0; 800 << 10])))
            .unwrap();
        drop(first_body);
        assert_eq!(grpc_status(&pending.await.unwrap()), None);
        let (again, again_body) = request(1000 << 10);
        drop(again_body);
        assert_eq!(grpc_status(&svc.call(again).await.unwrap()), None);
    }
}
