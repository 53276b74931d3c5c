//! A ferroscale server on loopback sockets, started in-process on a memory cloud.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::grpc::expander::ExpanderSettings;
use ferroscale::proto::externalgrpc as pb;
use ferroscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ferroscale::tls::ReloadingTls;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::Channel;

/// What a test server serves besides the plaintext CloudProvider listener.
#[derive(Default)]
pub struct Extras {
    pub expander: Option<Arc<ExpanderSettings>>,
    pub grpc_tls: Option<Arc<ReloadingTls>>,
    pub expander_tls: Option<Arc<ReloadingTls>>,
}

/// A server task on loopback listeners, stopped by sending on `stop`.
pub struct Running {
    pub grpc_addr: SocketAddr,
    pub http_addr: SocketAddr,
    pub expander_addr: Option<SocketAddr>,
    pub stop: tokio::sync::oneshot::Sender<()>,
    pub task: tokio::task::JoinHandle<ferroscale::Result<()>>,
}

impl Running {
    pub async fn spawn(
        cloud: Arc<dyn ferroscale::cloud::Cloud>,
        metrics: Arc<ferroscale::metrics::Metrics>,
        extras: Extras,
    ) -> Running {
        let grpc = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (grpc_addr, http_addr) = (grpc.local_addr().unwrap(), http.local_addr().unwrap());
        let expander = match extras.expander {
            Some(settings) => Some((TcpListener::bind("127.0.0.1:0").await.unwrap(), settings)),
            None => None,
        };
        let expander_addr = expander.as_ref().map(|(l, _)| l.local_addr().unwrap());
        let (stop, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(ferroscale::server::serve(
            cloud,
            metrics,
            ferroscale::server::Listeners {
                grpc,
                http,
                expander,
                grpc_tls: extras.grpc_tls,
                expander_tls: extras.expander_tls,
            },
            async {
                let _ = rx.await;
            },
            Duration::from_millis(200),
        ));
        Running {
            grpc_addr,
            http_addr,
            expander_addr,
            stop,
            task,
        }
    }
}

pub struct TestServer {
    pub client: CloudProviderClient<Channel>,
    pub grpc_addr: SocketAddr,
    pub http_addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<ferroscale::Result<()>>>,
}

impl TestServer {
    pub async fn start(yaml: &str) -> TestServer {
        let cloud = Arc::new(MemoryCloud::new(&MemoryConfig::parse(yaml).unwrap()).unwrap());
        Self::start_with(cloud).await
    }

    /// Serves any cloud.
    pub async fn start_with(cloud: Arc<dyn ferroscale::cloud::Cloud>) -> TestServer {
        Self::start_with_metrics(cloud, Default::default()).await
    }

    /// Serves any cloud, recording into `metrics` (shared with the cloud's own AWS metrics).
    pub async fn start_with_metrics(
        cloud: Arc<dyn ferroscale::cloud::Cloud>,
        metrics: Arc<ferroscale::metrics::Metrics>,
    ) -> TestServer {
        let running = Running::spawn(cloud, metrics, Extras::default()).await;
        let client = connect(running.grpc_addr).await;
        TestServer {
            client,
            grpc_addr: running.grpc_addr,
            http_addr: running.http_addr,
            stop: Some(running.stop),
            task: Some(running.task),
        }
    }

    /// Stops the server and waits until it has drained.
    pub async fn stop(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        self.task.take().unwrap().await.unwrap().unwrap();
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        http_get(self.http_addr, path).await
    }

    pub async fn target(&self, id: &str) -> i32 {
        self.client
            .clone()
            .node_group_target_size(pb::NodeGroupTargetSizeRequest { id: id.into() })
            .await
            .unwrap()
            .into_inner()
            .target_size
    }

    pub async fn instances(&self, id: &str) -> Vec<pb::Instance> {
        self.client
            .clone()
            .node_group_nodes(pb::NodeGroupNodesRequest { id: id.into() })
            .await
            .unwrap()
            .into_inner()
            .instances
    }
}

pub async fn connect(addr: SocketAddr) -> CloudProviderClient<Channel> {
    CloudProviderClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
}

/// A minimal HTTP/1.0 GET: (status, body).
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (status, body)
}
