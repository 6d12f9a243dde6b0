//! Which node image to run: the one named with `--node-image`, else upstream's node image at the
//! release the cluster runs (ClusterInformation `default`, `spec.calicoVersion`), else the release this
//! netctl knows best. Upstream defaults to `:latest`, which silently mixes releases; matching the
//! cluster avoids that.

use crate::datastore::{Datastore, StoreError};
use crate::resource::{Kind, ResourceKey};

/// The upstream node image, without a tag.
pub const NODE_IMAGE_REPOSITORY: &str = "quay.io/calico/node";

/// The newest release netctl knows; the image tag used when the cluster's release cannot be read.
pub const FALLBACK_RELEASE: &str = "v3.29.2";

/// The chosen image and, when it is a fallback, why (for a warning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageChoice {
    pub image: String,
    pub fallback_reason: Option<String>,
}

/// The image for a release tag such as `v3.29.2` (a missing `v` is added, as upstream tags carry one).
pub fn image_for_release(release: &str) -> String {
    let release = release.trim();
    if release.starts_with('v') {
        format!("{NODE_IMAGE_REPOSITORY}:{release}")
    } else {
        format!("{NODE_IMAGE_REPOSITORY}:v{release}")
    }
}

/// The cluster's release from ClusterInformation `default`, `None` when missing or empty.
pub async fn cluster_release(store: &dyn Datastore) -> Result<Option<String>, StoreError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    match store.get(&key).await {
        Ok(information) => Ok(information
            .spec
            .get("calicoVersion")
            .and_then(|value| value.as_str())
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_string)),
        Err(StoreError::NotFound(_)) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Chooses the image from the cluster's release, or the fallback with the reason.
pub fn choose(cluster: Result<Option<String>, String>) -> ImageChoice {
    match cluster {
        Ok(Some(release)) => ImageChoice {
            image: image_for_release(&release),
            fallback_reason: None,
        },
        Ok(None) => ImageChoice {
            image: image_for_release(FALLBACK_RELEASE),
            fallback_reason: Some(
                "ClusterInformation `default` does not name the cluster's release".into(),
            ),
        },
        Err(reason) => ImageChoice {
            image: image_for_release(FALLBACK_RELEASE),
            fallback_reason: Some(reason),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datastore::testing::TestStore;
    use crate::resource::Resource;

    #[tokio::test]
    async fn release_comes_from_cluster_information() {
        let mut information = Resource::new(Kind::ClusterInformation, "default");
        information.spec = serde_json::json!({"calicoVersion": "v3.28.2", "clusterType": "bgp"});
        let store = TestStore::with_resources([information.clone()]);
        assert_eq!(
            cluster_release(&store).await.unwrap().as_deref(),
            Some("v3.28.2")
        );
        information.spec = serde_json::json!({"calicoVersion": ""});
        store.insert(information);
        assert_eq!(cluster_release(&store).await.unwrap(), None);
        assert_eq!(cluster_release(&TestStore::new()).await.unwrap(), None);
    }

    #[test]
    fn image_follows_the_cluster_release() {
        assert_eq!(
            choose(Ok(Some("v3.28.1".into()))).image,
            "quay.io/calico/node:v3.28.1"
        );
        assert_eq!(image_for_release("3.28.1"), "quay.io/calico/node:v3.28.1");
        let fallback = choose(Err("unreachable".into()));
        assert_eq!(fallback.image, "quay.io/calico/node:v3.29.2");
        assert_eq!(fallback.fallback_reason.as_deref(), Some("unreachable"));
        assert!(choose(Ok(None)).fallback_reason.is_some());
    }
}
