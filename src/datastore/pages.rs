//! A list read as a pipeline: [`Pages`] asks for the next page while the one before it is decoded
//! and the one before that is printed, holding at most three pages.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Datastore, ListOptions, Page, StoreError};

/// The pages of a list as a pipeline of three stages, each on its own task: etcd serving page N+2,
/// netctl decoding page N+1 and the caller printing page N, all at once. A page's continue token is
/// known as soon as its answer arrives ([`Datastore::fetch_page`]), so the next request goes out
/// before the page is decoded, not after. At most three pages are held: the caller's, the one
/// decoded (or being decoded) and the one in flight; all are dropped, and the request in flight
/// abandoned, when the caller stops early (say, on a closed pipe).
pub struct Pages {
    decoded: mpsc::Receiver<Result<Page, StoreError>>,
    /// The fetcher and the decoder, awaited once the pages end (to pass on a panic).
    stages: Vec<JoinHandle<()>>,
}

impl Pages {
    /// Starts the first request at once; call within a tokio runtime.
    pub fn new(store: Arc<dyn Datastore>, options: ListOptions) -> Pages {
        // A capacity of one and a reservation before each step bound the pages: the fetcher asks
        // for the next page only when the decoder has taken the last one, and the decoder takes a
        // page only when the caller has taken the one before.
        let (fetched_tx, mut fetched_rx) = mpsc::channel::<FetchResult>(1);
        let (decoded_tx, decoded) = mpsc::channel(1);
        let fetcher = tokio::spawn(async move {
            let mut token: Option<String> = None;
            loop {
                let Ok(permit) = fetched_tx.reserve().await else {
                    return;
                };
                let fetched = store.fetch_page(&options, token.as_deref()).await;
                token = match &fetched {
                    Ok(fetched) => fetched.continue_token.clone(),
                    Err(_) => None,
                };
                permit.send(fetched);
                if token.is_none() {
                    return;
                }
            }
        });
        let runtime = tokio::runtime::Handle::current();
        let decoder = tokio::task::spawn_blocking(move || {
            loop {
                let Ok(permit) = runtime.block_on(decoded_tx.reserve()) else {
                    return;
                };
                let Some(fetched) = fetched_rx.blocking_recv() else {
                    return;
                };
                permit.send(fetched.and_then(FetchedPage::decode));
            }
        });
        Pages {
            decoded,
            stages: vec![fetcher, decoder],
        }
    }

    /// The next page, or `None` after the last (or after an error, which ends the list).
    pub async fn next(&mut self) -> Result<Option<Page>, StoreError> {
        match self.decoded.recv().await {
            Some(page) => page.map(Some),
            // The list is over, or a stage panicked: both stages are ending, so wait for them.
            None => {
                for stage in std::mem::take(&mut self.stages) {
                    if let Err(error) = stage.await {
                        if error.is_panic() {
                            std::panic::resume_unwind(error.into_panic());
                        }
                    }
                }
                Ok(None)
            }
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // The decoder ends by itself once the channels close; the fetcher may be waiting on etcd.
        if let Some(fetcher) = self.stages.first() {
            fetcher.abort();
        }
    }
}

type FetchResult = Result<FetchedPage, StoreError>;

/// A page as the datastore answered it: the token of the next page is known at once, the items
/// are decoded afterwards (see [`Pages`]).
pub struct FetchedPage {
    pub continue_token: Option<String>,
    decode: Box<dyn FnOnce() -> Result<Page, StoreError> + Send>,
}

impl FetchedPage {
    /// A page still to decode with `decode`.
    pub fn new(
        continue_token: Option<String>,
        decode: impl FnOnce() -> Result<Page, StoreError> + Send + 'static,
    ) -> FetchedPage {
        FetchedPage {
            continue_token,
            decode: Box::new(decode),
        }
    }

    /// A page decoded already.
    pub fn decoded(page: Page) -> FetchedPage {
        FetchedPage::new(page.continue_token.clone(), move || Ok(page))
    }

    pub fn decode(self) -> Result<Page, StoreError> {
        (self.decode)()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;

    use super::*;
    use crate::datastore::{DatastoreType, Plain};
    use crate::resource::{Kind, Resource, ResourceKey};

    /// A store of `pages` pages of one host endpoint each (`h0`, `h1`, …) that counts the pages
    /// asked for; a page may fail to be read, or panic while it is decoded.
    struct PagedStore {
        pages: usize,
        fetched: Arc<AtomicUsize>,
        fail_at: Option<usize>,
        panic_at: Option<usize>,
        /// Decoding a page waits until the page after it has been asked for.
        decode_after_next: bool,
    }

    impl PagedStore {
        fn new(pages: usize) -> PagedStore {
            PagedStore {
                pages,
                fetched: Arc::new(AtomicUsize::new(0)),
                fail_at: None,
                panic_at: None,
                decode_after_next: false,
            }
        }
    }

    #[async_trait]
    impl Datastore for PagedStore {
        fn kind(&self) -> DatastoreType {
            DatastoreType::EtcdV3
        }
        async fn check(&self) -> Result<(), StoreError> {
            Ok(())
        }
        async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
            Err(StoreError::NotFound(key.clone()))
        }
        async fn list_page(&self, _: &ListOptions, _: Option<&str>) -> Result<Page, StoreError> {
            unreachable!("Pages reads through fetch_page")
        }
        async fn fetch_page(
            &self,
            _: &ListOptions,
            token: Option<&str>,
        ) -> Result<FetchedPage, StoreError> {
            let index: usize = token.map_or(0, |token| token.parse().unwrap());
            self.fetched.fetch_add(1, Ordering::SeqCst);
            if self.fail_at == Some(index) {
                return Err(StoreError::failed(
                    format!("a read of page {index}"),
                    Plain("the test says so".into()),
                ));
            }
            let next = (index + 1 < self.pages).then(|| (index + 1).to_string());
            let panics = self.panic_at == Some(index);
            let token = next.clone();
            let (fetched, wait) = (
                self.fetched.clone(),
                self.decode_after_next && next.is_some(),
            );
            Ok(FetchedPage::new(next, move || {
                assert!(!panics, "decoding page {index}");
                let asked = std::time::Instant::now();
                while wait && fetched.load(Ordering::SeqCst) < index + 2 {
                    assert!(
                        asked.elapsed() < Duration::from_secs(5),
                        "page {} was not asked for while page {index} was decoded",
                        index + 1
                    );
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(Page {
                    items: vec![Resource::new(Kind::HostEndpoint, format!("h{index}"))],
                    bodies: Vec::new(),
                    continue_token: token,
                    revision: "7".into(),
                })
            }))
        }
        async fn create(&self, _: &Resource) -> Result<Resource, StoreError> {
            unreachable!("nothing is written")
        }
        async fn update(&self, _: &Resource) -> Result<Resource, StoreError> {
            unreachable!("nothing is written")
        }
        async fn delete(&self, _: &ResourceKey, _: Option<&str>) -> Result<Resource, StoreError> {
            unreachable!("nothing is written")
        }
    }

    async fn names(pages: &mut Pages) -> Vec<Result<String, String>> {
        let mut names = Vec::new();
        loop {
            match pages.next().await {
                Ok(Some(page)) => {
                    names.extend(page.items.iter().map(|item| Ok(item.metadata.name.clone())))
                }
                Ok(None) => return names,
                Err(error) => names.push(Err(error.to_string())),
            }
        }
    }

    fn options() -> ListOptions {
        ListOptions::new(Kind::HostEndpoint)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_page_arrives_once_in_order_and_the_end_stays_the_end() {
        let store = Arc::new(PagedStore::new(10));
        let mut pages = Pages::new(store.clone(), options());
        let expected: Vec<Result<String, String>> = (0..10).map(|i| Ok(format!("h{i}"))).collect();
        assert_eq!(names(&mut pages).await, expected);
        assert!(pages.next().await.unwrap().is_none());
        assert_eq!(store.fetched.load(Ordering::SeqCst), 10);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_next_page_is_asked_for_before_this_one_is_decoded() {
        let store = Arc::new(PagedStore {
            decode_after_next: true,
            ..PagedStore::new(4)
        });
        let mut pages = Pages::new(store, options());
        let expected: Vec<Result<String, String>> = (0..4).map(|i| Ok(format!("h{i}"))).collect();
        assert_eq!(names(&mut pages).await, expected);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_that_stops_reading_holds_three_pages_and_dropping_them_stops_the_reads() {
        let store = Arc::new(PagedStore::new(10));
        let mut pages = Pages::new(store.clone(), options());
        let first = pages.next().await.unwrap().unwrap();
        assert_eq!(first.items[0].metadata.name, "h0");
        // The caller holds page 0: page 1 is decoded and waits, page 2 has been read, no more.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(store.fetched.load(Ordering::SeqCst), 3);
        drop(pages);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(store.fetched.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_page_that_cannot_be_read_ends_the_list_after_the_pages_before_it() {
        let store = Arc::new(PagedStore {
            fail_at: Some(2),
            ..PagedStore::new(10)
        });
        let mut pages = Pages::new(store.clone(), options());
        assert_eq!(
            names(&mut pages).await,
            [
                Ok("h0".to_string()),
                Ok("h1".to_string()),
                Err("a read of page 2 failed".to_string())
            ]
        );
        assert_eq!(store.fetched.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[should_panic(expected = "decoding page 1")]
    async fn a_panic_while_decoding_reaches_the_caller() {
        let store = Arc::new(PagedStore {
            panic_at: Some(1),
            ..PagedStore::new(3)
        });
        let mut pages = Pages::new(store, options());
        names(&mut pages).await;
    }
}
