//! A fault-injecting HTTP proxy in front of moto, for what moto cannot do: failed scaling activities,
//! capacity AWS could not fulfil (instances hidden from DescribeAutoScalingGroups), throttling and outages,
//! and the answers of actions moto does not implement (GetInstanceTypesFromInstanceRequirements).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An AWS error the proxy answers in place of moto.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The action failed, e.g. `TerminateInstanceInAutoScalingGroup`.
    pub action: String,
    /// Requests of that action let through before the failures start.
    pub skip: u32,
    /// Requests that fail, then the rule is spent.
    pub times: u32,
    /// HTTP status and AWS error code, e.g. (400, "Throttling"), (403, "AccessDenied").
    pub status: u16,
    pub code: String,
}

impl Failure {
    /// The next `times` requests of `action` fail with `code`.
    pub fn new(action: &str, status: u16, code: &str) -> Failure {
        Failure {
            action: action.into(),
            skip: 0,
            times: u32::MAX,
            status,
            code: code.into(),
        }
    }
}

/// What the proxy does to the next requests.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Answer every request with 503, as an unreachable or failing AWS endpoint.
    pub down: bool,
    /// Answer this many more requests with a `Throttling` error.
    pub throttle: u32,
    /// DescribeScalingActivities answers one failed activity with this status message...
    pub failed_activity: Option<String>,
    /// ...started at this Unix time.
    pub failed_activity_start: i64,
    /// DescribeAutoScalingGroups answers with no instances, as if AWS had not launched any.
    pub hide_instances: bool,
    /// AWS errors in place of moto's answers.
    pub failures: Vec<Failure>,
    /// The next request of this action is sent to moto, then its answer held until
    /// [`FaultProxy::release`] (a call AWS carried out whose answer is slow to come back).
    pub hold: Option<String>,
    /// (action, XML body): answered with 200 in place of moto, for actions moto does not implement.
    pub answers: Vec<(String, String)>,
}

#[derive(Clone)]
struct Proxy {
    upstream: SocketAddr,
    faults: Arc<Mutex<Faults>>,
    requests: Arc<Mutex<Vec<String>>>,
    bodies: Arc<Mutex<Vec<(String, String)>>>,
    held: Arc<Held>,
}

/// The answer being held, if any.
#[derive(Default)]
pub struct Held {
    holding: std::sync::atomic::AtomicBool,
    release: tokio::sync::Notify,
}

/// A running proxy: its URL and the knobs.
pub struct FaultProxy {
    pub url: String,
    pub faults: Arc<Mutex<Faults>>,
    /// The AWS actions seen, in order.
    pub requests: Arc<Mutex<Vec<String>>>,
    /// (action, request body) of every request, in order.
    pub bodies: Arc<Mutex<Vec<(String, String)>>>,
    held: Arc<Held>,
}

impl FaultProxy {
    pub async fn start(upstream_url: &str) -> FaultProxy {
        let upstream: SocketAddr = upstream_url.trim_start_matches("http://").parse().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Proxy {
            upstream,
            faults: Arc::default(),
            requests: Arc::default(),
            bodies: Arc::default(),
            held: Arc::default(),
        };
        let (faults, requests, bodies, held) = (
            state.faults.clone(),
            state.requests.clone(),
            state.bodies.clone(),
            state.held.clone(),
        );
        let app = axum::Router::new().fallback(handle).with_state(state);
        tokio::spawn(async move { axum::serve(listener, app).await });
        FaultProxy {
            url,
            faults,
            requests,
            bodies,
            held,
        }
    }

    pub fn set(&self, change: impl FnOnce(&mut Faults)) {
        change(&mut self.faults.lock().unwrap());
    }

    /// Waits until the answer of the `hold` action is being held (moto has carried the call out).
    pub async fn until_held(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !self.held.holding.load(std::sync::atomic::Ordering::SeqCst) {
            assert!(std::time::Instant::now() < deadline, "no request was held");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Lets the held answer go.
    pub fn release(&self) {
        self.held.release.notify_one();
    }

    /// How many requests of `action` the proxy saw.
    pub fn count(&self, action: &str) -> usize {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|a| *a == action)
            .count()
    }
}

/// The request's AWS action: its `X-Amz-Target`, its query `Action`, or the EKS REST path it names.
fn action(body: &[u8], headers: &HeaderMap, path: &str) -> String {
    if path.starts_with("/clusters/") && path.contains("/node-groups/") {
        return "DescribeNodegroup".into();
    }
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        return target.rsplit('.').next().unwrap_or(target).to_string();
    }
    String::from_utf8_lossy(body)
        .split('&')
        .find_map(|kv| kv.strip_prefix("Action="))
        .unwrap_or("")
        .to_string()
}

async fn handle(State(p): State<Proxy>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20).await.unwrap();
    let action = action(&body, &parts.headers, parts.uri.path());
    p.requests.lock().unwrap().push(action.clone());
    p.bodies
        .lock()
        .unwrap()
        .push((action.clone(), String::from_utf8_lossy(&body).into_owned()));
    let (faults, failure, hold) = {
        let mut f = p.faults.lock().unwrap();
        let snapshot = f.clone();
        if f.throttle > 0 {
            f.throttle -= 1;
        }
        let mut failure = None;
        if let Some(rule) = f.failures.iter_mut().find(|r| r.action == action) {
            if rule.skip > 0 {
                rule.skip -= 1;
            } else if rule.times > 0 {
                rule.times -= 1;
                failure = Some(rule.clone());
            }
        }
        let hold = f.hold.as_deref() == Some(action.as_str());
        if hold {
            f.hold = None;
        }
        (snapshot, failure, hold)
    };
    if let Some(rule) = failure {
        return aws_error(&body, &action, rule.status, &rule.code);
    }
    if let Some((_, answer)) = faults.answers.iter().find(|(a, _)| *a == action) {
        return xml(StatusCode::OK, answer.clone());
    }
    if faults.down {
        return (StatusCode::SERVICE_UNAVAILABLE, "").into_response();
    }
    if faults.throttle > 0 {
        return xml(
            StatusCode::BAD_REQUEST,
            "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>ferroscale-test</RequestId></ErrorResponse>".into(),
        );
    }
    if action == "DescribeScalingActivities" {
        if let Some(message) = faults.failed_activity {
            return xml(
                StatusCode::OK,
                activities(&message, faults.failed_activity_start),
            );
        }
    }
    let (status, content_type, mut answer) = forward(p.upstream, &parts, &body).await;
    if hold {
        p.held
            .holding
            .store(true, std::sync::atomic::Ordering::SeqCst);
        p.held.release.notified().await;
        p.held
            .holding
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
    if action == "DescribeAutoScalingGroups" && faults.hide_instances {
        answer = strip_instances(&answer);
    }
    let mut r = Response::new(axum::body::Body::from(answer));
    *r.status_mut() = status;
    if let Some(ct) = content_type {
        r.headers_mut().insert("content-type", ct.parse().unwrap());
    }
    r
}

/// An AWS error answer in the protocol of the service asked: EC2's `<Response><Errors>`, the query
/// protocol's `<ErrorResponse>` (Auto Scaling) or REST-JSON's `x-amzn-errortype` (EKS).
fn aws_error(body: &[u8], action: &str, status: u16, code: &str) -> Response {
    let message = format!("injected by the test proxy: {code}");
    if action == "DescribeNodegroup" {
        let body = format!(r#"{{"__type":"{code}","message":"{message}"}}"#);
        let status = StatusCode::from_u16(status).unwrap();
        return (
            status,
            [
                ("content-type", "application/json"),
                ("x-amzn-errortype", code),
            ],
            body,
        )
            .into_response();
    }
    let ec2 = String::from_utf8_lossy(body).contains("Version=2016-11-15");
    let text = if ec2 {
        format!("<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors><RequestID>ferroscale-test</RequestID></Response>")
    } else {
        format!("<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>ferroscale-test</RequestId></ErrorResponse>")
    };
    xml(StatusCode::from_u16(status).unwrap(), text)
}

fn xml(status: StatusCode, body: String) -> Response {
    (status, [("content-type", "text/xml")], body).into_response()
}

fn activities(message: &str, start: i64) -> String {
    let start = aws_smithy_types::DateTime::from_secs(start)
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap();
    format!(
        r#"<DescribeScalingActivitiesResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><DescribeScalingActivitiesResult><Activities><member><ActivityId>a-1</ActivityId><AutoScalingGroupName>g</AutoScalingGroupName><Description>Launching a new EC2 instance.  Status Reason: {message}</Description><Cause>test</Cause><StartTime>{start}</StartTime><EndTime>{start}</EndTime><StatusCode>Failed</StatusCode><StatusMessage>{message}</StatusMessage><Progress>100</Progress></member></Activities></DescribeScalingActivitiesResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></DescribeScalingActivitiesResponse>"#
    )
}

/// Removes every `<Instances>...</Instances>` block (groups then report no instance).
fn strip_instances(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find("<Instances>") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("</Instances>")
            .map(|e| start + e + "</Instances>".len())
            .unwrap();
        out.push_str("<Instances/>");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Sends the request to moto over a fresh connection and reads the whole answer.
async fn forward(
    upstream: SocketAddr,
    parts: &axum::http::request::Parts,
    body: &Bytes,
) -> (StatusCode, Option<String>, String) {
    let mut s = tokio::net::TcpStream::connect(upstream).await.unwrap();
    let mut head = format!(
        "{} {} HTTP/1.1\r\n",
        parts.method,
        parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
    );
    for (k, v) in &parts.headers {
        if !matches!(
            k.as_str(),
            "connection" | "content-length" | "transfer-encoding"
        ) {
            head.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap_or("")));
        }
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, payload) = text.split_once("\r\n\r\n").unwrap();
    let status: u16 = head[9..12].parse().unwrap();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            })
            .map(|(_, v)| v.trim().to_string())
    };
    let payload = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(payload)
    } else {
        payload.to_string()
    };
    (
        StatusCode::from_u16(status).unwrap(),
        header("content-type"),
        payload,
    )
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}
