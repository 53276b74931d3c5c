//! Writes honour their caller (moto behind the fault proxy): a `serve` write queued behind a slow one
//! starts nothing once its RPC's deadline passed, and says which ids it did not act on; a `run` replica
//! whose Lease renewals hang starts no AWS write after its term ended, even one that had passed every
//! check before and was waiting inside the group's lock.

use std::time::Duration;

use ferroscale::k8s::lease::LeaseSettings;
use ferroscale::proto::externalgrpc as pb;
use ferroscale::run::RunSettings;
use tonic::Code;

use crate::support::aws_proxy::FaultProxy;
use crate::support::fixtures::grpc::node;
use crate::support::fixtures::kube::pod;
use crate::support::kube_api::{KubeApi, PODS};
use crate::support::moto::Moto;
use crate::support::run_harness::{run_settings, Harness};
use crate::support::server::TestServer;

const TERMINATE: &str = "TerminateInstanceInAutoScalingGroup";

fn increase(
    delta: i32,
    timeout: Option<Duration>,
) -> tonic::Request<pb::NodeGroupIncreaseSizeRequest> {
    let mut r = tonic::Request::new(pb::NodeGroupIncreaseSizeRequest {
        delta,
        id: "workers".into(),
    });
    if let Some(t) = timeout {
        r.set_timeout(t);
    }
    r
}

/// A server on moto's group `workers` (two instances) through a proxy, and a first IncreaseSize (no
/// deadline) holding the group's lock: AWS carried its SetDesiredCapacity out, the answer is held.
async fn slow_first_write(
    moto: &Moto,
) -> (
    FaultProxy,
    TestServer,
    tokio::task::JoinHandle<Result<(), tonic::Status>>,
) {
    moto.group("workers", "m5.large", 0, 10, 2, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::from_secs(3600), Default::default())
        .await;
    let s = TestServer::start_with(cloud).await;
    proxy.set(|f| f.hold = Some("SetDesiredCapacity".into()));
    let first = tokio::spawn({
        let mut c = s.client.clone();
        async move {
            c.node_group_increase_size(increase(1, None))
                .await
                .map(|_| ())
        }
    });
    proxy.until_held().await;
    (proxy, s, first)
}

/// AWS's lifecycle state of each instance of `workers`, by instance id.
async fn lifecycles(moto: &Moto) -> Vec<(String, String)> {
    let out = moto
        .asg
        .describe_auto_scaling_groups()
        .auto_scaling_group_names("workers")
        .send()
        .await
        .unwrap();
    out.auto_scaling_groups()[0]
        .instances()
        .iter()
        .map(|i| {
            let state = i.lifecycle_state().map(|s| s.as_str().to_string());
            (
                i.instance_id().unwrap().to_string(),
                state.unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_nodes_whose_deadline_passes_behind_the_lock_terminates_nothing() {
    let moto = Moto::start().await;
    let (proxy, s, first) = slow_first_write(&moto).await;
    let ids: Vec<String> = s
        .instances("workers")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    let mut request = tonic::Request::new(pb::NodeGroupDeleteNodesRequest {
        nodes: vec![node(&ids[0])],
        id: "workers".into(),
    });
    request.set_timeout(Duration::from_secs(1));
    let e = s
        .client
        .clone()
        .node_group_delete_nodes(request)
        .await
        .unwrap_err();
    // The answer comes from the write itself: it gave up and says what it did not do.
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert!(
        e.message()
            .contains(&format!("done [], not done [{:?}]", ids[0])),
        "{}",
        e.message()
    );
    proxy.release();
    first.await.unwrap().unwrap();
    assert_eq!(proxy.count(TERMINATE), 0, "{:?}", proxy.requests);
    let states = lifecycles(&moto).await;
    let victim = ids[0].rsplit('/').next().unwrap();
    assert!(
        states
            .iter()
            .any(|(id, st)| id == victim && st == "InService"),
        "{victim} still running: {states:?}"
    );
    assert_eq!(moto.desired("workers").await, 3, "the first write only");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_increase_size_past_its_deadline_sets_nothing() {
    let moto = Moto::start().await;
    let (proxy, s, first) = slow_first_write(&moto).await;
    let e = s
        .client
        .clone()
        .node_group_increase_size(increase(4, Some(Duration::from_secs(1))))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert!(
        e.message().contains("SetDesiredCapacity not started"),
        "{}",
        e.message()
    );
    proxy.release();
    first.await.unwrap().unwrap();
    assert_eq!(proxy.count("SetDesiredCapacity"), 1, "the first write's");
    assert_eq!(
        moto.desired("workers").await,
        3,
        "2 + 1; the late +4 never sent"
    );
    assert_eq!(s.target("workers").await, 3);
    s.stop().await;
}

/// A Lease of 2 s given up 1 s after the last renewal started, renewed every 200 ms.
fn lease(identity: &str) -> LeaseSettings {
    LeaseSettings {
        namespace: "kube-system".into(),
        name: "cluster-autoscaler".into(),
        identity: identity.into(),
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(200),
    }
}

const LEASE_WRITES: &str = "PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
const LEASE_CREATE: &str = "POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_renewal_lets_no_aws_write_start_after_the_term_ended() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 3, 0, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::from_secs(3600), Default::default())
        .await;
    let api = KubeApi::start().await;
    api.put(PODS, pod("web", "1", None, "web"));
    let run = RunSettings {
        lease: Some(lease("replica-a")),
        ..run_settings()
    };
    let settings = ferroscale::cli::flags::default_engine();
    let h = Harness::with_cloud(api.clone(), cloud, settings, run).await;
    h.synced(0, 1).await;
    // The scale-up passed every check and holds its group's lock; it reads the group afresh (no refresh
    // is due for an hour, so this is the next DescribeAutoScalingGroups) and AWS's answer is held there.
    proxy.set(|f| f.hold = Some("DescribeAutoScalingGroups".into()));
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(h.runner.run(async {
        let _ = stopped.await;
    }));
    proxy.until_held().await;

    // The renewals hang from now on. Every renewal that succeeded started before the API received its
    // write, so once the renew deadline has passed since the latest Lease write received, the term has
    // ended (the same monotonic clock, whatever the elector's loop does).
    let held = std::time::Instant::now();
    api.hold(LEASE_WRITES);
    loop {
        // The Lease's creation is its first renewal.
        let last = [LEASE_WRITES, LEASE_CREATE]
            .iter()
            .filter_map(|w| api.last_received(w, held))
            .max()
            .expect("the Lease was written");
        if std::time::Instant::now() >= last + Duration::from_secs(1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The write that waited inside the lock goes on: it must not start its SetDesiredCapacity.
    proxy.release();
    let outcome = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("replica a stops")
        .unwrap();
    assert!(
        outcome.unwrap_err().to_string().contains("leadership lost"),
        "it says why"
    );
    assert_eq!(
        proxy.count("SetDesiredCapacity"),
        0,
        "no write after the term: {:?}",
        proxy.requests
    );
    assert_eq!(moto.desired("workers").await, 0);
    api.release();
}
