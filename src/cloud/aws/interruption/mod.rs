//! The interruption queue (`ferroscale run --interruption-queue`): an SQS queue EventBridge fills with
//! events about instances, long-polled with aws-sdk-sqs. Messages are decoded here (`events`); the loop
//! decides what each means for its nodes and deletes a message only once it has handled it.

pub mod events;

use std::time::Duration;

use aws_sdk_sqs::Client;

use crate::error::{Error, Result};

/// Longest long poll SQS allows.
const LONG_POLL: Duration = Duration::from_secs(20);

/// Most messages one receive returns (SQS's maximum).
const BATCH: i32 = 10;

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
    /// GetQueueUrl once.
    pub async fn connect(
        name_or_url: &str,
        region: Option<&str>,
        endpoint: Option<&str>,
    ) -> Result<Self> {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
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

    /// Waits up to `wait` (at most SQS's 20 s) for messages and returns those that came.
    pub async fn receive(&self, wait: Duration) -> Result<Vec<Message>> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(BATCH)
            .wait_time_seconds(wait.min(LONG_POLL).as_secs() as i32)
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

    /// Deletes a handled message.
    pub async fn delete(&self, receipt: &str) -> Result<()> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .send()
            .await
            .map_err(|e| sqs_error("DeleteMessage", &self.url, e))?;
        Ok(())
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
