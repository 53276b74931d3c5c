//! The interruption queue (`ferroscale run --interruption-queue`): an SQS queue EventBridge fills with
//! events about instances, long-polled with aws-sdk-sqs. Messages are decoded here (`events`); the loop
//! decides what each means for its nodes and deletes a message only once it has handled it.

pub mod events;

use std::time::Duration;

use aws_sdk_sqs::Client;

use crate::error::{Error, Result};

/// Longest long poll SQS allows.
const LONG_POLL: Duration = Duration::from_secs(20);

/// Most messages one receive returns, and most receipts one DeleteMessageBatch takes (SQS's maxima).
pub const BATCH: usize = 10;

/// How long connecting to SQS may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one attempt may take: a long poll's 20 s and some.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a call may take, retries included: a hung SQS endpoint never holds the poller.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(75);

/// One message as received: its body and the handle that deletes it.
#[derive(Debug, Clone)]
pub struct Message {
    /// SQS's id of the message: the same each time it is received again.
    pub id: String,
    pub body: String,
    pub receipt: String,
}

/// A connected interruption queue.
#[derive(Clone, Debug)]
pub struct InterruptionQueue {
    client: Client,
    url: String,
}

impl InterruptionQueue {
    /// Connects to the queue named (or addressed, when `name_or_url` is an `https://` or `http://` URL)
    /// through the SDK's standard chain (`AWS_REGION`, credentials, `AWS_ENDPOINT_URL`); `region`
    /// overrides the chain's, `endpoint` the endpoint (tests, emulators). A name is resolved with
    /// GetQueueUrl once. Every call is bounded in time (connect, attempt, operation).
    pub async fn connect(
        name_or_url: &str,
        region: Option<&str>,
        endpoint: Option<&str>,
    ) -> Result<Self> {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .operation_attempt_timeout(ATTEMPT_TIMEOUT)
                    .operation_timeout(OPERATION_TIMEOUT)
                    .build(),
            );
        if let Some(r) = region {
            loader = loader.region(aws_config::Region::new(r.to_string()));
        }
        if let Some(url) = endpoint {
            loader = loader.endpoint_url(url);
        }
        let client = Client::new(&loader.load().await);
        let url = if name_or_url.starts_with("https://") || name_or_url.starts_with("http://") {
            name_or_url.to_string()
        } else {
            client
                .get_queue_url()
                .queue_name(name_or_url)
                .send()
                .await
                .map_err(|e| sqs_error("GetQueueUrl", name_or_url, e))?
                .queue_url
                .ok_or_else(|| {
                    Error::Unavailable(format!("GetQueueUrl {name_or_url}: no URL in the answer"))
                })?
        };
        Ok(InterruptionQueue { client, url })
    }

    /// The queue's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where its events must come from: the account in its URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`)
    /// and the client's region. EventBridge delivers only events of its own account and region.
    pub fn origin(&self) -> events::Origin {
        let account = self
            .url
            .split('/')
            .rev()
            .nth(1)
            .filter(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_string);
        events::Origin {
            account,
            region: self.client.config().region().map(|r| r.to_string()),
        }
    }

    /// Waits up to `wait` (at most SQS's 20 s) for up to `max` messages (at most [`BATCH`]) and returns
    /// those that came.
    pub async fn receive(&self, wait: Duration, max: usize) -> Result<Vec<Message>> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(max.clamp(1, BATCH) as i32)
            .wait_time_seconds(i32::try_from(wait.min(LONG_POLL).as_secs()).unwrap_or(20))
            .send()
            .await
            .map_err(|e| sqs_error("ReceiveMessage", &self.url, e))?;
        Ok(out
            .messages
            .unwrap_or_default()
            .into_iter()
            .filter_map(|m| {
                Some(Message {
                    id: m.message_id.unwrap_or_default(),
                    body: m.body.unwrap_or_default(),
                    receipt: m.receipt_handle?,
                })
            })
            .collect())
    }

    /// Deletes messages by their receipts, [`BATCH`] per DeleteMessageBatch call; returns how many
    /// could not be deleted (each comes back after its visibility timeout).
    pub async fn delete(&self, receipts: &[String]) -> usize {
        let mut failed = 0;
        for chunk in receipts.chunks(BATCH) {
            let entries: Vec<_> = chunk
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(r)
                        .build()
                        .ok()
                })
                .collect();
            match self
                .client
                .delete_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
            {
                Ok(out) => {
                    for f in out.failed() {
                        tracing::warn!(code = f.code(), message = ?f.message(), "could not delete an interruption message");
                    }
                    failed += out.failed().len();
                }
                Err(e) => {
                    let e = sqs_error("DeleteMessageBatch", &self.url, e);
                    tracing::warn!(error = %e, "could not delete interruption messages");
                    failed += chunk.len();
                }
            }
        }
        failed
    }
}

fn sqs_error<E: std::error::Error + Send + Sync + 'static>(
    op: &str,
    queue: &str,
    e: aws_sdk_sqs::error::SdkError<E>,
) -> Error {
    use aws_sdk_sqs::error::DisplayErrorContext;
    Error::Unavailable(format!("sqs {op} {queue}: {}", DisplayErrorContext(&e)))
}
