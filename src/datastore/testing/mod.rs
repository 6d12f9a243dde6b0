//! The one test datastore: [`TestStore`], an in-memory [`Datastore`] with etcd's rules (revisions,
//! pinned paged lists, conditional writes, batches as transactions) and hooks that inject
//! conflicts, delays and failures on cue and count what is asked. It can also stand in front of a
//! real datastore (`TestStore::over`), adding the same hooks to real etcd.
//!
//! It exists for tests only: compiled for the crate's unit tests (`cfg(test)`) and, through the
//! `testing` cargo feature that the crate's dev-dependency on itself turns on, for the integration
//! tests — never into a release build (`docs/architecture.md`, "Tests").
//!
//! ```ignore
//! use netctl::datastore::testing::{Cue, Operation, TestStore};
//! let store = TestStore::with_resources([host_endpoint("h1")]).page_size(2);
//! store.race(Operation::Update, 2);             // the next two updates lose a race
//! store.fail_call(Operation::WriteBatch, 3, || StoreError::failed("a write", Plain("boom".into())));
//! store.on(Operation::ReadMany, |_, _| Cue::delay(Duration::from_millis(50)));
//! // ... run the code under test with `&store` ...
//! assert_eq!(store.calls(Operation::Update), 3);
//! assert_eq!(store.max_in_flight(Operation::ReadMany), 3);
//! ```
//!
//! What it leaves out: compaction (a continue token never expires), leases and the coordination
//! keys, the two layouts of tiered policies, and `Detail` (every list returns whole resources).

mod hooks;
mod memory;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use super::{
    BatchLimits, BatchOutcome, DEFAULT_PAGE_SIZE, Datastore, DatastoreType, FetchedPage,
    ListOptions, Page, Plain, StoreError, Write, WriteOutcome, batch,
};
use crate::resource::{Kind, Resource, ResourceKey};

use hooks::Failure;
pub use hooks::{Call, Cue, Operation};
use memory::Memory;

/// A hook: sees each call of its operation before it is served (and the store, to read or change
/// what is stored meanwhile) and says what becomes of it.
type Hook = Arc<dyn Fn(&Call, &TestStore) -> Cue + Send + Sync>;

/// The test datastore. Cheap to clone: clones share one store.
#[derive(Clone)]
pub struct TestStore {
    shared: Arc<Shared>,
}

struct Shared {
    backend: Backend,
    settings: Settings,
    hooks: Mutex<Vec<(Operation, Hook)>>,
    books: Mutex<Books>,
}

enum Backend {
    Memory(Mutex<Memory>),
    Over(Arc<dyn Datastore>),
}

#[derive(Clone)]
struct Settings {
    datastore_type: Option<DatastoreType>,
    page_size: Option<usize>,
    batch_limits: Option<BatchLimits>,
    request_timeout: Option<Duration>,
    transactions: bool,
}

/// What was asked: every call in order, and per operation how many are out now and at most.
#[derive(Default)]
struct Books {
    log: Vec<Call>,
    calls: [usize; Operation::ALL.len()],
    in_flight: [usize; Operation::ALL.len()],
    max_in_flight: [usize; Operation::ALL.len()],
}

impl Default for TestStore {
    fn default() -> TestStore {
        TestStore::new()
    }
}

impl std::fmt::Debug for TestStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestStore")
            .field(
                "in_memory",
                &matches!(self.shared.backend, Backend::Memory(_)),
            )
            .finish_non_exhaustive()
    }
}

impl TestStore {
    /// An empty in-memory etcd: revision 1, batches written as one transaction each.
    pub fn new() -> TestStore {
        TestStore::with_backend(Backend::Memory(Mutex::default()))
    }

    /// An in-memory store holding `resources`, each written at a revision of its own.
    pub fn with_resources(resources: impl IntoIterator<Item = Resource>) -> TestStore {
        let store = TestStore::new();
        for resource in resources {
            store.insert(resource);
        }
        store
    }

    /// A store that serves every call from `inner` (real etcd, say), with this store's hooks and
    /// books around each. What is stored is `inner`'s: the methods that read or change this
    /// store's memory ([`TestStore::insert`], [`TestStore::stored`], …) panic.
    pub fn over(inner: Arc<dyn Datastore>) -> TestStore {
        TestStore::with_backend(Backend::Over(inner))
    }

    fn with_backend(backend: Backend) -> TestStore {
        TestStore {
            shared: Arc::new(Shared {
                backend,
                settings: Settings {
                    datastore_type: None,
                    page_size: None,
                    batch_limits: None,
                    request_timeout: None,
                    transactions: true,
                },
                hooks: Mutex::default(),
                books: Mutex::default(),
            }),
        }
    }

    fn settings(mut self, change: impl FnOnce(&mut Settings)) -> TestStore {
        let shared = Arc::get_mut(&mut self.shared)
            .expect("configure a TestStore before cloning it or handing it out");
        change(&mut shared.settings);
        self
    }

    /// What [`Datastore::kind`] says (default: etcdv3, or `inner`'s).
    pub fn datastore_type(self, datastore_type: DatastoreType) -> TestStore {
        self.settings(|settings| settings.datastore_type = Some(datastore_type))
    }

    /// At most `size` resources a page, whatever the caller asks for.
    pub fn page_size(self, size: usize) -> TestStore {
        assert!(size > 0, "a page holds at least one resource");
        self.settings(|settings| settings.page_size = Some(size))
    }

    /// What [`Datastore::batch_limits`] says (default: [`BatchLimits::DEFAULT`], or `inner`'s).
    pub fn batch_limits(self, limits: BatchLimits) -> TestStore {
        self.settings(|settings| settings.batch_limits = Some(limits))
    }

    /// What [`Datastore::request_timeout`] says (default: 10 s, or `inner`'s).
    pub fn request_timeout(self, timeout: Duration) -> TestStore {
        self.settings(|settings| settings.request_timeout = Some(timeout))
    }

    /// Batches written one object at a time through create, update and delete, and many keys
    /// read one at a time through get, as the Kubernetes backend does (so hooks and counters on
    /// those operations see every write and read).
    pub fn without_transactions(self) -> TestStore {
        self.settings(|settings| settings.transactions = false)
    }
}

/// Hooks: what happens to the calls.
impl TestStore {
    /// Calls `hook` before every call of `operation` is served. Hooks run in the order they were
    /// added; their [`Cue`]s add up. A hook may read and change what is stored through the
    /// store it is handed (another client's write between a read and a write), or panic.
    pub fn on(
        &self,
        operation: Operation,
        hook: impl Fn(&Call, &TestStore) -> Cue + Send + Sync + 'static,
    ) -> &TestStore {
        lock(&self.shared.hooks).push((operation, Arc::new(hook)));
        self
    }

    /// The `number`th call of `operation` (1 for the first) fails with `error()`, before it does
    /// anything.
    pub fn fail_call(
        &self,
        operation: Operation,
        number: usize,
        error: impl Fn() -> StoreError + Send + Sync + 'static,
    ) -> &TestStore {
        self.on(operation, move |call, _| match call.number == number {
            true => Cue::fail(error()),
            false => Cue::pass(),
        })
    }

    /// Every call of `operation` takes `delay` longer.
    pub fn delay(&self, operation: Operation, delay: Duration) -> &TestStore {
        self.on(operation, move |_, _| Cue::delay(delay))
    }

    /// The first `times` calls of `operation` (a write) lose a race: just before each is served,
    /// another client writes every resource it is about again, unchanged, so its revision moves
    /// on and the call's guard fails as it would on etcd. In memory only.
    pub fn race(&self, operation: Operation, times: usize) -> &TestStore {
        self.on(operation, move |call, store| {
            if call.number <= times {
                for key in &call.keys {
                    store.touch(key);
                }
            }
            Cue::pass()
        })
    }

    fn cue(&self, call: &Call) -> Cue {
        let hooks: Vec<Hook> = lock(&self.shared.hooks)
            .iter()
            .filter(|(operation, _)| *operation == call.operation)
            .map(|(_, hook)| hook.clone())
            .collect();
        // The lock is not held while hooks run: a hook may add hooks, or panic.
        hooks
            .iter()
            .fold(Cue::pass(), |cue, hook| cue.and(hook(call, self)))
    }
}

/// Books: what was asked.
impl TestStore {
    /// How many calls of `operation` were made (served or not).
    pub fn calls(&self, operation: Operation) -> usize {
        lock(&self.shared.books).calls[operation.index()]
    }

    /// The most calls of `operation` that were out at once.
    pub fn max_in_flight(&self, operation: Operation) -> usize {
        lock(&self.shared.books).max_in_flight[operation.index()]
    }

    /// How many calls of `operation` are out now.
    pub fn in_flight(&self, operation: Operation) -> usize {
        lock(&self.shared.books).in_flight[operation.index()]
    }

    /// Every call, in the order they were made.
    pub fn log(&self) -> Vec<Call> {
        lock(&self.shared.books).log.clone()
    }

    /// How many keys were read: by gets and `read_many`s.
    pub fn keys_read(&self) -> usize {
        lock(&self.shared.books)
            .log
            .iter()
            .filter(|call| matches!(call.operation, Operation::Get | Operation::ReadMany))
            .map(|call| call.keys.len())
            .sum()
    }

    /// Counts a call, runs its hooks and holds its place in flight until the guard drops.
    fn begin(&self, operation: Operation, keys: Vec<ResourceKey>) -> (Call, InFlight) {
        self.begin_listing(operation, keys, None, None)
    }

    fn begin_listing(
        &self,
        operation: Operation,
        keys: Vec<ResourceKey>,
        kind: Option<Kind>,
        continue_token: Option<String>,
    ) -> (Call, InFlight) {
        let index = operation.index();
        let mut books = lock(&self.shared.books);
        books.calls[index] += 1;
        books.in_flight[index] += 1;
        books.max_in_flight[index] = books.max_in_flight[index].max(books.in_flight[index]);
        let call = Call {
            operation,
            number: books.calls[index],
            keys,
            kind,
            continue_token,
        };
        books.log.push(call.clone());
        let guard = InFlight {
            shared: self.shared.clone(),
            operation,
        };
        (call, guard)
    }

    /// The cue of `call`, its delay waited out; the failure that refuses it, if one does.
    async fn serve(&self, call: &Call) -> Result<Option<StoreError>, StoreError> {
        let cue = self.cue(call);
        if !cue.delay.is_zero() {
            tokio::time::sleep(cue.delay).await;
        }
        match cue.failure {
            None => Ok(None),
            Some(Failure::Before(error)) => Err(error),
            Some(Failure::AnswerLost(error)) => Ok(Some(error)),
        }
    }
}

/// Decrements its operation's calls in flight when the call ends (or is dropped half way).
struct InFlight {
    shared: Arc<Shared>,
    operation: Operation,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.shared.books).in_flight[self.operation.index()] -= 1;
    }
}

/// What is stored, read and changed directly: no hooks run and nothing is counted.
impl TestStore {
    fn memory(&self) -> MutexGuard<'_, Memory> {
        match &self.shared.backend {
            Backend::Memory(memory) => lock(memory),
            Backend::Over(_) => panic!(
                "this TestStore stands in front of another datastore: read and change that one"
            ),
        }
    }

    /// Stores `resource` as another client would, whatever is stored (a new revision; `uid` and
    /// `creationTimestamp` set when missing); what is stored now.
    pub fn insert(&self, resource: Resource) -> Resource {
        self.memory().put(&resource)
    }

    /// What is stored under `key` now.
    pub fn stored(&self, key: &ResourceKey) -> Option<Resource> {
        self.memory().current(key).cloned()
    }

    /// Everything of `kind` stored now, in key order.
    pub fn stored_of(&self, kind: Kind) -> Vec<Resource> {
        let memory = self.memory();
        memory
            .listed_at(kind, None, memory.revision())
            .cloned()
            .collect()
    }

    /// Another client writes `key`'s resource again, unchanged: its revision moves on. The new
    /// revision; `None` when nothing is stored there.
    pub fn touch(&self, key: &ResourceKey) -> Option<u64> {
        self.memory().touch(key)
    }

    /// Another client deletes `key`'s resource; what was stored.
    pub fn remove(&self, key: &ResourceKey) -> Option<Resource> {
        self.memory().remove(key)
    }

    /// The store's revision: that of its latest write (1 when nothing was ever written).
    pub fn revision(&self) -> u64 {
        self.memory().revision()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A hook that panics (an assertion in a test) must not poison the store for the next call.
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// A continue token: the revision the list is pinned to and how many resources came before.
fn encode_token(revision: u64, offset: usize) -> String {
    format!("{revision}:{offset}")
}

fn decode_token(token: &str) -> Result<(u64, usize), StoreError> {
    token
        .split_once(':')
        .and_then(|(revision, offset)| Some((revision.parse().ok()?, offset.parse().ok()?)))
        .ok_or_else(|| {
            StoreError::failed("a list", Plain(format!("invalid continue token `{token}`")))
        })
}

impl TestStore {
    /// One page of a list, cut from the store as it was at the list's revision.
    fn page(&self, options: &ListOptions, token: Option<&str>) -> Result<Page, StoreError> {
        let memory = self.memory();
        let (revision, offset) = match token {
            Some(token) => decode_token(token)?,
            None => (memory.revision(), 0),
        };
        let asked = match options.page_size {
            0 => DEFAULT_PAGE_SIZE,
            size => size,
        };
        let size = self
            .shared
            .settings
            .page_size
            .map_or(asked, |cap| cap.min(asked));
        let mut listed = memory
            .listed_at(options.kind, options.namespace.as_deref(), revision)
            .skip(offset);
        let items: Vec<Resource> = listed.by_ref().take(size).cloned().collect();
        let more = listed.next().is_some();
        Ok(Page {
            continue_token: more.then(|| encode_token(revision, offset + items.len())),
            items,
            bodies: Vec::new(),
            revision: revision.to_string(),
        })
    }

    /// A single write in memory: its guard, then the write at a new revision.
    fn write_one(&self, write: &Write) -> Result<Resource, StoreError> {
        let mut memory = self.memory();
        memory.guard(write)?;
        let (_, stored) = memory
            .apply(std::slice::from_ref(write))
            .pop()
            .expect("one write");
        Ok(match (write, stored) {
            (Write::Delete { .. }, Some(previous)) => previous,
            (_, Some(stored)) => stored,
            (_, None) => unreachable!("a guarded write finds what it writes"),
        })
    }

    /// A batch in memory as etcd writes it: one transaction, every write applied at one revision
    /// or, when a guard fails, none (the refused ones with what is stored now).
    fn transaction(&self, writes: &[Write]) -> BatchOutcome {
        let mut memory = self.memory();
        let guards: Vec<Result<(), StoreError>> =
            writes.iter().map(|write| memory.guard(write)).collect();
        if guards.iter().all(Result::is_ok) {
            return BatchOutcome::done(
                memory
                    .apply(writes)
                    .into_iter()
                    .map(|(outcome, _)| outcome)
                    .collect(),
            );
        }
        let outcomes = writes
            .iter()
            .zip(guards)
            .map(|(write, guard)| match guard {
                Ok(()) => WriteOutcome::NotApplied,
                Err(error) => WriteOutcome::Refused {
                    error,
                    current: memory.current(&write.key()).cloned().map(Box::new),
                },
            })
            .collect();
        BatchOutcome::done(outcomes)
    }

    fn inner(&self) -> Option<&dyn Datastore> {
        match &self.shared.backend {
            Backend::Memory(_) => None,
            Backend::Over(inner) => Some(inner.as_ref()),
        }
    }

    /// Counts a call of one resource and serves its cue: its place in flight, and the error
    /// that will lose its answer, if one will.
    async fn enter(
        &self,
        operation: Operation,
        key: &ResourceKey,
    ) -> Result<(InFlight, Option<StoreError>), StoreError> {
        let (call, in_flight) = self.begin(operation, vec![key.clone()]);
        let lost = self.serve(&call).await?;
        Ok((in_flight, lost))
    }
}

/// The answer of a call, or the error that lost it.
fn answer<T>(lost: Option<StoreError>, answer: Result<T, StoreError>) -> Result<T, StoreError> {
    match lost {
        Some(error) => Err(error),
        None => answer,
    }
}

#[async_trait]
impl Datastore for TestStore {
    fn kind(&self) -> DatastoreType {
        match (self.shared.settings.datastore_type, self.inner()) {
            (Some(datastore_type), _) => datastore_type,
            (None, Some(inner)) => inner.kind(),
            (None, None) => DatastoreType::EtcdV3,
        }
    }

    async fn check(&self) -> Result<(), StoreError> {
        let (call, _in_flight) = self.begin(Operation::Check, Vec::new());
        if let Some(error) = self.serve(&call).await? {
            return Err(error);
        }
        match self.inner() {
            None => Ok(()),
            Some(inner) => inner.check().await,
        }
    }

    async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
        let (_in_flight, lost) = self.enter(Operation::Get, key).await?;
        let found = match self.inner() {
            None => self
                .stored(key)
                .ok_or_else(|| StoreError::NotFound(key.clone())),
            Some(inner) => inner.get(key).await,
        };
        answer(lost, found)
    }

    async fn list_page(
        &self,
        options: &ListOptions,
        continue_token: Option<&str>,
    ) -> Result<Page, StoreError> {
        self.fetch_page(options, continue_token).await?.decode()
    }

    /// Hands the page out undecoded: its decoding is an [`Operation::Decode`] call of its own,
    /// with hooks (run on the decoding thread: a delay there blocks it, as decoding does).
    async fn fetch_page(
        &self,
        options: &ListOptions,
        continue_token: Option<&str>,
    ) -> Result<FetchedPage, StoreError> {
        let (call, in_flight) = self.begin_listing(
            Operation::List,
            Vec::new(),
            Some(options.kind),
            continue_token.map(str::to_string),
        );
        let lost = self.serve(&call).await?;
        let fetched = match self.inner() {
            None => FetchedPage::decoded(self.page(options, continue_token)?),
            Some(inner) => inner.fetch_page(options, continue_token).await?,
        };
        drop(in_flight);
        if let Some(error) = lost {
            return Err(error);
        }
        let store = self.clone();
        let kind = options.kind;
        let token = fetched.continue_token.clone();
        Ok(FetchedPage::new(token.clone(), move || {
            let (call, _in_flight) =
                store.begin_listing(Operation::Decode, Vec::new(), Some(kind), token);
            let cue = store.cue(&call);
            if !cue.delay.is_zero() {
                std::thread::sleep(cue.delay);
            }
            let page = match cue.failure {
                Some(Failure::Before(error)) => return Err(error),
                Some(Failure::AnswerLost(error)) => Err(error),
                None => Ok(()),
            };
            let decoded = fetched.decode()?;
            page.map(|()| decoded)
        }))
    }

    async fn create(&self, resource: &Resource) -> Result<Resource, StoreError> {
        let (_in_flight, lost) = self.enter(Operation::Create, &resource.key()).await?;
        let written = match self.inner() {
            None => self.write_one(&Write::Create(resource.clone())),
            Some(inner) => inner.create(resource).await,
        };
        answer(lost, written)
    }

    async fn update(&self, resource: &Resource) -> Result<Resource, StoreError> {
        let (_in_flight, lost) = self.enter(Operation::Update, &resource.key()).await?;
        let written = match self.inner() {
            None => self.write_one(&Write::Update(resource.clone())),
            Some(inner) => inner.update(resource).await,
        };
        answer(lost, written)
    }

    async fn delete(
        &self,
        key: &ResourceKey,
        resource_version: Option<&str>,
    ) -> Result<Resource, StoreError> {
        let (_in_flight, lost) = self.enter(Operation::Delete, key).await?;
        let deleted = match (self.inner(), resource_version) {
            (Some(inner), _) => inner.delete(key, resource_version).await,
            (None, Some(revision)) => self.write_one(&Write::Delete {
                key: key.clone(),
                revision: revision.to_string(),
            }),
            (None, None) => self
                .remove(key)
                .ok_or_else(|| StoreError::NotFound(key.clone())),
        };
        answer(lost, deleted)
    }

    fn request_timeout(&self) -> Duration {
        match (self.shared.settings.request_timeout, self.inner()) {
            (Some(timeout), _) => timeout,
            (None, Some(inner)) => inner.request_timeout(),
            (None, None) => Duration::from_secs(10),
        }
    }

    fn batch_limits(&self) -> BatchLimits {
        match (self.shared.settings.batch_limits, self.inner()) {
            (Some(limits), _) => limits,
            (None, Some(inner)) => inner.batch_limits(),
            (None, None) => BatchLimits::DEFAULT,
        }
    }

    async fn read_many(&self, keys: &[ResourceKey]) -> Result<Vec<Option<Resource>>, StoreError> {
        if !self.shared.settings.transactions {
            return batch::read_one_by_one(self, keys).await;
        }
        let (call, _in_flight) = self.begin(Operation::ReadMany, keys.to_vec());
        let lost = self.serve(&call).await?;
        let found = match self.inner() {
            None => {
                let memory = self.memory();
                keys.iter()
                    .map(|key| memory.current(key).cloned())
                    .collect()
            }
            Some(inner) => inner.read_many(keys).await?,
        };
        answer(lost, Ok(found))
    }

    async fn write_batch(&self, writes: &[Write]) -> BatchOutcome {
        if !self.shared.settings.transactions {
            return batch::write_one_by_one(self, writes).await;
        }
        let keys = writes.iter().map(Write::key).collect();
        let (call, _in_flight) = self.begin(Operation::WriteBatch, keys);
        let lost = match self.serve(&call).await {
            Ok(lost) => lost,
            Err(error) => return BatchOutcome::failed(writes.len(), error),
        };
        let outcome = match self.inner() {
            None => self.transaction(writes),
            Some(inner) => inner.write_batch(writes).await,
        };
        match lost {
            Some(error) => BatchOutcome::unknown(writes.len(), error),
            None => outcome,
        }
    }

    async fn health(&self) -> Result<Option<super::health::DatastoreHealth>, StoreError> {
        match self.inner() {
            None => Ok(None),
            Some(inner) => inner.health().await,
        }
    }
}
