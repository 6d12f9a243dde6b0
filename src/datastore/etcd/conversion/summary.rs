//! The serde seeds of [`decode_summary`](super::decode_summary): one pass over the stored JSON that
//! keeps only what a table needs and skips the rest (`IgnoredAny` validates without allocating).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::METADATA_ANNOTATION;
use crate::resource::{API_VERSION, Kind, ObjectMeta, Resource};

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum EnvelopeField {
    Kind,
    Metadata,
    Spec,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum MetadataField {
    Name,
    Namespace,
    Labels,
    Annotations,
    #[serde(other)]
    Other,
}

/// A map key, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(text.to_string())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A whole resource, keeping what the fields below name.
pub(super) struct Envelope<'a> {
    pub spec_fields: &'a [&'a str],
    pub labels: bool,
    /// The resource is a policy: keep `spec.tier` and the name annotation, which its name is
    /// read back from.
    pub tier: bool,
}

impl<'de> DeserializeSeed<'de> for Envelope<'_> {
    type Value = Resource;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Resource, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Envelope<'_> {
    type Value = Resource;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a resource")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Resource, A::Error> {
        let mut kind = None;
        let mut metadata = ObjectMeta::default();
        let mut spec = Value::Null;
        while let Some(field) = map.next_key::<EnvelopeField>()? {
            match field {
                EnvelopeField::Kind => kind = Some(map.next_value::<Kind>()?),
                EnvelopeField::Metadata => {
                    metadata = map.next_value_seed(Metadata {
                        labels: self.labels,
                        policy: self.tier,
                    })?
                }
                EnvelopeField::Spec => {
                    spec = map.next_value_seed(Spec {
                        fields: self.spec_fields,
                        tier: self.tier,
                    })?
                }
                EnvelopeField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kind = kind.ok_or_else(|| serde::de::Error::missing_field("kind"))?;
        Ok(Resource {
            api_version: API_VERSION.to_string(),
            kind,
            metadata,
            spec,
            status: Value::Null,
        })
    }
}

struct Metadata {
    labels: bool,
    policy: bool,
}

impl<'de> DeserializeSeed<'de> for Metadata {
    type Value = ObjectMeta;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ObjectMeta, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Metadata {
    type Value = ObjectMeta;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectMeta, A::Error> {
        let mut metadata = ObjectMeta::default();
        while let Some(field) = map.next_key::<MetadataField>()? {
            match field {
                MetadataField::Name => metadata.name = map.next_value()?,
                MetadataField::Namespace => metadata.namespace = map.next_value()?,
                MetadataField::Labels if self.labels => {
                    metadata.labels = map
                        .next_value::<Option<BTreeMap<String, String>>>()?
                        .unwrap_or_default()
                }
                // Only the annotation that names a stored policy is kept.
                MetadataField::Annotations if self.policy => {
                    if let Some(name) = map.next_value_seed(PolicyAnnotation)? {
                        metadata
                            .annotations
                            .insert(METADATA_ANNOTATION.to_string(), name);
                    }
                }
                MetadataField::Labels | MetadataField::Annotations | MetadataField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(metadata)
    }
}

/// The annotations of a stored policy, of which only [`METADATA_ANNOTATION`] is read.
struct PolicyAnnotation;

impl<'de> DeserializeSeed<'de> for PolicyAnnotation {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PolicyAnnotation {
    type Value = Option<String>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("annotations")
    }

    fn visit_unit<E>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut found = None;
        while let Some(Key(key)) = map.next_key::<Key>()? {
            if key == METADATA_ANNOTATION {
                found = map.next_value()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

struct Spec<'a> {
    fields: &'a [&'a str],
    tier: bool,
}

impl<'de> DeserializeSeed<'de> for Spec<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Spec<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a spec")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = Map::new();
        while let Some(Key(key)) = map.next_key::<Key>()? {
            let wanted = self.fields.contains(&key.as_ref()) || (self.tier && key == "tier");
            if wanted {
                kept.insert(key.into_owned(), map.next_value()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Value::Object(kept))
    }
}
