//! How a fact is defined once: [`define_facts!`] turns one list — each fact's name, type, default,
//! `--set` parser, type check, discovery and where it is shown — into the [`Facts`](super::Facts)
//! struct, its plan format (serde) and the [`FACTS`](super::FACTS) table that `--set`, the type
//! check, discovery, the plan's facts table, templates and completion all read. Adding a fact is
//! adding one entry to that list.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Fact, FactError, FactOrigin, Facts};

/// Where discovery finds a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discovery {
    /// Read from the resource datastore (`discover_facts`).
    Datastore,
    /// Read from the Kubernetes objects of the install (`discover_cluster_facts`), when a cluster
    /// is configured; a saved plan that discovered it needs the cluster to be checked for staleness.
    Cluster,
    /// netctl's own configuration (not the cluster's).
    Configuration,
    /// Only flags and defaults set it.
    Never,
}

/// When a saved plan's fact is compared with what discovery reads now (`exec::stale`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// Whenever discovery reads it, whatever its origin in the plan (the installed version: a
    /// plan for another release is wrong for this cluster).
    Always,
    /// When the plan discovered it: a value given by flag is the operator's call.
    WhenDiscovered,
    /// Never: it may change between planning and running without making the plan wrong (the
    /// Deployments in the mesh are rolled whatever they are), or discovery does not read it.
    Never,
}

/// Where a fact is shown: plans (their JSON, digest and facts table) and `upgrade status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// In every plan.
    Always,
    /// In plans only once it has a value (facts that only some installs have), so plans for the
    /// others do not list them; templates always see them (empty when unset).
    WhenSet,
}

impl Shown {
    pub(super) fn shows<T: FactValue>(self, fact: &Fact<T>) -> bool {
        match self {
            Shown::Always => true,
            Shown::WhenSet => !(fact.origin == FactOrigin::Default && fact.value.is_empty()),
        }
    }
}

/// What a fact's value must offer: the plan format, and whether it is empty (for [`Shown`]).
pub trait FactValue: Serialize + DeserializeOwned + Clone + PartialEq {
    fn is_empty(&self) -> bool {
        false
    }
}

impl FactValue for String {
    fn is_empty(&self) -> bool {
        String::is_empty(self)
    }
}

impl FactValue for bool {}
impl FactValue for crate::plan::Release {}
impl FactValue for crate::config::DatastoreType {}
impl FactValue for super::InstallMethod {}
impl FactValue for super::ManifestFlavor {}
impl<T: FactValue> FactValue for Vec<T> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
}
impl FactValue for super::HostEndpointFact {}
impl FactValue for super::OwnerReferenceFact {}
impl FactValue for super::DeploymentFact {}

/// One fact, as every reader of facts sees it.
pub struct FactDefinition {
    /// The name in plans, templates (`facts.<name>`), `--set` and `check` steps.
    pub name: &'static str,
    /// What it is (the first line of its documentation).
    pub about: &'static str,
    /// The values it may take when they are a fixed set (completion, and `--set`'s message).
    pub values: &'static [&'static str],
    pub discovery: Discovery,
    /// Whether a saved plan is stale when discovery reads something else now.
    pub stale: Stale,
    pub shown: Shown,
    /// Sets it from `--set NAME=TEXT`; the error is the reason the text is refused.
    pub(super) set: fn(&mut Facts, &str) -> Result<(), String>,
    /// Checks its value against its type before any template sees it.
    pub(super) check: fn(&Facts) -> Result<(), FactError>,
    /// Its value as JSON (what templates and the plan's facts table show) and its origin.
    pub(super) value: fn(&Facts) -> (serde_json::Value, FactOrigin),
    /// Where its value came from.
    pub(super) origin: fn(&Facts) -> FactOrigin,
    /// Whether the plan shows it now.
    pub(super) is_shown: fn(&Facts) -> bool,
}

impl FactDefinition {
    /// Where this fact's value in `facts` came from.
    pub fn origin(&self, facts: &Facts) -> FactOrigin {
        (self.origin)(facts)
    }
}

impl std::fmt::Debug for FactDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FactDefinition")
            .field("name", &self.name)
            .field("discovery", &self.discovery)
            .field("shown", &self.shown)
            .finish_non_exhaustive()
    }
}

/// Defines the facts (see the module documentation). Each entry:
///
/// ```text
/// /// What it is.
/// name: Type {
///     default: <expression>,           // before discovery and flags
///     parse: <fn(&str, values: &[&str]) -> Result<Type, String>>,
///     check: <fn(&'static str, &Type) -> Result<(), FactError>>,
///     discovered: Datastore(<fn(&DiscoveredFacts) -> Option<Type>>) | Cluster(..) | Configuration(..) | Never,
///     stale: Always | WhenDiscovered | Never,
///     shown: Always | WhenSet,
///     values: ["a", "b"],
/// }
/// ```
macro_rules! define_facts {
    (@discovered $found:ident) => {
        None
    };
    (@discovered $found:ident, $discovered:expr) => {
        ($discovered)($found)
    };
    ($(
        #[doc = $about:literal]
        $(#[doc = $more:literal])*
        $name:ident: $type:ty {
            default: $default:expr,
            parse: $parse:expr,
            check: $check:expr,
            discovered: $source:ident $(($discovered:expr))?,
            stale: $stale:ident,
            shown: $shown:ident,
            values: [$($value:literal),*] $(,)?
        }
    )*) => {
        /// Everything the planner decides on, one field per fact of [`FACTS`]. Serialised in plans
        /// as `name: {value, origin}`, in this order.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Facts {
            $(
                #[doc = $about]
                $(#[doc = $more])*
                pub $name: Fact<$type>,
            )*
        }

        /// Every fact, in the order plans list them.
        pub static FACTS: &[FactDefinition] = &[$(
            FactDefinition {
                name: stringify!($name),
                about: $about.trim_ascii(),
                values: &[$($value),*],
                discovery: Discovery::$source,
                stale: Stale::$stale,
                shown: Shown::$shown,
                set: |facts, text| {
                    facts.$name = Fact::new(($parse)(text, &[$($value),*])?, FactOrigin::Flag);
                    Ok(())
                },
                check: |facts| ($check)(stringify!($name), &facts.$name.value),
                value: |facts| {
                    let value = serde_json::to_value(&facts.$name.value).unwrap_or_default();
                    (value, facts.$name.origin)
                },
                origin: |facts| facts.$name.origin,
                is_shown: |facts| Shown::$shown.shows(&facts.$name),
            },
        )*];

        /// The names `--set` accepts, in the order plans list them.
        pub const FACT_NAMES: &[&str] = &[$(stringify!($name)),*];

        impl Facts {
            /// Each fact from discovery where it found one, else its default (flags come later).
            fn discovered_or_default(discovered: &DiscoveredFacts) -> Facts {
                Facts {$(
                    $name: match define_facts!(@discovered discovered $(, $discovered)?) {
                        Some(value) => Fact::new(value, FactOrigin::Discovered),
                        None => Fact::default_value($default),
                    },
                )*}
            }
        }

        impl serde::Serialize for Facts {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                $(
                    if Shown::$shown.shows(&self.$name) {
                        map.serialize_entry(stringify!($name), &self.$name)?;
                    }
                )*
                map.end()
            }
        }

        impl<'de> serde::Deserialize<'de> for Facts {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Facts, D::Error> {
                #[derive(serde::Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Stored {$(
                    #[serde(default)]
                    $name: Option<Fact<$type>>,
                )*}
                let stored = Stored::deserialize(deserializer)?;
                Ok(Facts {$(
                    $name: match (stored.$name, Shown::$shown) {
                        (Some(fact), _) => fact,
                        // Left out of the plan while unset.
                        (None, Shown::WhenSet) => Fact::default_value($default),
                        (None, Shown::Always) => {
                            return Err(<D::Error as serde::de::Error>::missing_field(
                                stringify!($name),
                            ));
                        }
                    },
                )*})
            }
        }
    };
}

pub(super) use define_facts;
