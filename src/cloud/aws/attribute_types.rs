//! The instance types of an attribute-based group ([`super::requirements`]), asked of EC2 for the
//! architecture and virtualization type of its launch template's image (`DescribeImages`, then
//! `GetInstanceTypesFromInstanceRequirements`), in EC2's order; both answers are cached ([`super::ttl`]).

use std::sync::Arc;

use aws_sdk_ec2::types as ec2;

use super::api::Api;
use super::requirements::Requirements;
use super::ttl;
use crate::error::{Error, Result};

/// An image's architecture and virtualization type, which the instance types must support.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Image {
    architectures: Vec<String>,
    virtualization: Vec<String>,
}

/// Cached answers of DescribeImages and GetInstanceTypesFromInstanceRequirements.
pub struct Resolver {
    images: moka::future::Cache<String, Arc<Image>>,
    types: moka::future::Cache<(Requirements, String), Arc<Vec<String>>>,
}

impl Default for Resolver {
    fn default() -> Self {
        Resolver {
            images: moka::future::Cache::builder()
                .time_to_live(ttl::IMAGE_TTL)
                .build(),
            types: moka::future::Cache::builder()
                .time_to_live(ttl::INSTANCE_REQUIREMENTS_TTL)
                .build(),
        }
    }
}

impl Resolver {
    /// The instance types meeting `req` for the image `image_id` launches, in EC2's order (never empty);
    /// `group` names the Auto Scaling group in errors.
    pub async fn types(
        &self,
        api: &Api,
        group: &str,
        req: &Requirements,
        image_id: &str,
    ) -> Result<Arc<Vec<String>>> {
        let key = (req.clone(), image_id.to_string());
        if let Some(t) = self.types.get(&key).await {
            return Ok(t);
        }
        let image = self.image(api, group, image_id).await?;
        let found = Arc::new(types_for(api, req.request(), &image).await?);
        if found.is_empty() {
            return Err(Error::GroupData {
                group: group.to_string(),
                reason: format!(
                    "no instance type meets the instance requirements for image {image_id}"
                ),
            });
        }
        self.types.insert(key, found.clone()).await;
        Ok(found)
    }

    async fn image(&self, api: &Api, group: &str, image_id: &str) -> Result<Arc<Image>> {
        if let Some(i) = self.images.get(image_id).await {
            return Ok(i);
        }
        let out = api
            .call(
                "ec2/DescribeImages",
                api.ec2.describe_images().image_ids(image_id).send(),
            )
            .await?;
        let image = Image {
            architectures: out
                .images()
                .iter()
                .filter_map(|i| i.architecture().map(|a| a.as_str().to_string()))
                .collect(),
            virtualization: out
                .images()
                .iter()
                .filter_map(|i| i.virtualization_type().map(|v| v.as_str().to_string()))
                .collect(),
        };
        if image.architectures.is_empty() {
            return Err(Error::GroupData {
                group: group.to_string(),
                reason: format!("launch template image {image_id} not found"),
            });
        }
        let image = Arc::new(image);
        self.images
            .insert(image_id.to_string(), image.clone())
            .await;
        Ok(image)
    }
}

/// Every page of GetInstanceTypesFromInstanceRequirements.
async fn types_for(
    api: &Api,
    req: &ec2::InstanceRequirementsRequest,
    image: &Image,
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = api
            .call(
                "ec2/GetInstanceTypesFromInstanceRequirements",
                api.ec2
                    .get_instance_types_from_instance_requirements()
                    .set_architecture_types(Some(
                        image
                            .architectures
                            .iter()
                            .map(|a| ec2::ArchitectureType::from(a.as_str()))
                            .collect(),
                    ))
                    .set_virtualization_types(Some(
                        image
                            .virtualization
                            .iter()
                            .map(|v| ec2::VirtualizationType::from(v.as_str()))
                            .collect(),
                    ))
                    .instance_requirements(req.clone())
                    .set_next_token(token.take())
                    .send(),
            )
            .await?;
        out.extend(
            page.instance_types()
                .iter()
                .filter_map(|t| t.instance_type().map(str::to_string)),
        );
        match page.next_token() {
            Some(t) if !t.is_empty() => token = Some(t.to_string()),
            _ => return Ok(out),
        }
    }
}
