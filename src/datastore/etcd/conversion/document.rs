//! The serde seed of [`decode_document`](super::decode_document): one pass over a stored value
//! that decodes the envelope and reads the spec and status onto tapes of the stored text
//! (`output::StoredJson`), to be printed without being parsed again.

use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::output::{StoredJson, StoredTape};
use crate::resource::{Kind, ObjectMeta};

/// A stored document: the envelope decoded, the spec and status on tapes.
pub(super) struct Document {
    pub api_version: String,
    pub kind: Kind,
    pub metadata: ObjectMeta,
    pub spec: Option<StoredTape>,
    pub status: Option<StoredTape>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Field {
    ApiVersion,
    Kind,
    Metadata,
    Spec,
    Status,
    #[serde(other)]
    Other,
}

/// Reads a stored document of `text` (the deserializer's input).
pub(super) struct Envelope<'de> {
    pub text: &'de str,
}

impl<'de> DeserializeSeed<'de> for Envelope<'de> {
    type Value = Document;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Document, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Envelope<'de> {
    type Value = Document;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a resource")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut api_version = None;
        let mut kind = None;
        let mut metadata = None;
        let mut spec = None;
        let mut status = None;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::ApiVersion => api_version = Some(map.next_value()?),
                Field::Kind => kind = Some(map.next_value()?),
                Field::Metadata => metadata = Some(map.next_value()?),
                Field::Spec => spec = Some(map.next_value_seed(Part { text: self.text })?),
                Field::Status => status = Some(map.next_value_seed(Part { text: self.text })?),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Document {
            api_version: api_version
                .ok_or_else(|| serde::de::Error::missing_field("apiVersion"))?,
            kind: kind.ok_or_else(|| serde::de::Error::missing_field("kind"))?,
            metadata: metadata.unwrap_or_default(),
            spec,
            status,
        })
    }
}

/// A spec or status onto a tape of the stored text.
struct Part<'de> {
    text: &'de str,
}

impl<'de> DeserializeSeed<'de> for Part<'de> {
    type Value = StoredTape;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<StoredTape, D::Error> {
        StoredJson::read(self.text, deserializer)
    }
}
