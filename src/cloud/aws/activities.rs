//! Failed launches from DescribeScalingActivities, classified as CA needs them: out-of-resources failures
//! (class 1) make CA back off a group within seconds and try the next one, instead of after 15 minutes.

use crate::model::{ErrorClass, InstanceError};

/// EC2 error codes that mean "no capacity or quota", and phrases of their messages when the code itself
/// is not in the activity's status message.
const OUT_OF_RESOURCES: [(&str, &[&str]); 7] = [
    (
        "InsufficientInstanceCapacity",
        &["do not have sufficient", "insufficient capacity"],
    ),
    ("VcpuLimitExceeded", &["vcpu limit", "more vcpu capacity"]),
    ("InstanceLimitExceeded", &["instance limit"]),
    ("InsufficientFreeAddressesInSubnet", &["free addresses"]),
    ("MaxSpotInstanceCountExceeded", &["max spot instance count"]),
    ("SpotMaxPriceTooLow", &["price too low", "spot price"]),
    ("UnfulfillableCapacity", &["unfulfillable capacity"]),
];

/// Classifies the status message of a failed scaling activity.
pub fn classify(message: &str) -> InstanceError {
    let lower = message.to_ascii_lowercase();
    for (code, phrases) in OUT_OF_RESOURCES {
        if message.contains(code) || phrases.iter().any(|p| lower.contains(p)) {
            return InstanceError {
                code: code.to_string(),
                message: message.to_string(),
                class: ErrorClass::OutOfResources,
            };
        }
    }
    InstanceError {
        code: error_code_in(message).unwrap_or("LaunchFailed").to_string(),
        message: message.to_string(),
        class: ErrorClass::Other,
    }
}

/// The first word that looks like an EC2 error code (`InvalidAMIID.NotFound`, `AuthFailure`).
fn error_code_in(message: &str) -> Option<&str> {
    message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .map(|w| w.trim_end_matches('.'))
        .find(|w| {
            w.len() > 4
                && w.starts_with(|c: char| c.is_ascii_uppercase())
                && w.contains('.')
                && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_failures_are_out_of_resources() {
        let e = classify(
            "We currently do not have sufficient p4d.24xlarge capacity in the Availability Zone you requested (us-east-1a). Launching EC2 instance failed.",
        );
        assert_eq!(
            (e.code.as_str(), e.class),
            ("InsufficientInstanceCapacity", ErrorClass::OutOfResources)
        );
        let e = classify("You have requested more vCPU capacity than your current vCPU limit of 32 allows for the instance bucket that the specified instance type belongs to. Launching EC2 instance failed.");
        assert_eq!(
            (e.code.as_str(), e.class),
            ("VcpuLimitExceeded", ErrorClass::OutOfResources)
        );
        let e = classify("Launching EC2 instance failed. InstanceLimitExceeded");
        assert_eq!(e.code, "InstanceLimitExceeded");
    }

    #[test]
    fn other_failures_keep_their_code() {
        let e = classify("The image id '[ami-123]' does not exist. InvalidAMIID.NotFound. Launching EC2 instance failed.");
        assert_eq!(
            (e.code.as_str(), e.class),
            ("InvalidAMIID.NotFound", ErrorClass::Other)
        );
        let e = classify("Something odd happened");
        assert_eq!(
            (e.code.as_str(), e.class),
            ("LaunchFailed", ErrorClass::Other)
        );
    }
}
