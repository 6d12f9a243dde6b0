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
    use std::time::Duration;

    use super::*;
    use crate::datastore::Plain;
    use crate::datastore::testing::{Cue, Operation, TestStore};
    use crate::resource::{Kind, Resource};

    /// A store of `pages` pages of one host endpoint each (`h0`, `h1`, …).
    fn paged_store(pages: usize) -> TestStore {
        TestStore::with_resources(
            (0..pages).map(|index| Resource::new(Kind::HostEndpoint, format!("h{index}"))),
        )
        .page_size(1)
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

    fn expected(count: usize) -> Vec<Result<String, String>> {
        // `h0` … `h9` sort as they count.
        (0..count).map(|i| Ok(format!("h{i}"))).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_page_arrives_once_in_order_and_the_end_stays_the_end() {
        let store = paged_store(10);
        let mut pages = Pages::new(Arc::new(store.clone()), options());
        assert_eq!(names(&mut pages).await, expected(10));
        assert!(pages.next().await.unwrap().is_none());
        assert_eq!(store.calls(Operation::List), 10);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_next_page_is_asked_for_before_this_one_is_decoded() {
        let store = paged_store(4);
        // Decoding a page waits until the page after it has been asked for.
        store.on(Operation::Decode, |call, store| {
            let asked = std::time::Instant::now();
            while call.continue_token.is_some() && store.calls(Operation::List) <= call.number {
                assert!(
                    asked.elapsed() < Duration::from_secs(5),
                    "page {} was not asked for while page {} was decoded",
                    call.number,
                    call.number - 1
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            Cue::pass()
        });
        let mut pages = Pages::new(Arc::new(store), options());
        assert_eq!(names(&mut pages).await, expected(4));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_that_stops_reading_holds_three_pages_and_dropping_them_stops_the_reads() {
        let store = paged_store(10);
        let mut pages = Pages::new(Arc::new(store.clone()), options());
        let first = pages.next().await.unwrap().unwrap();
        assert_eq!(first.items[0].metadata.name, "h0");
        // The caller holds page 0: page 1 is decoded and waits, page 2 has been read, no more.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(store.calls(Operation::List), 3);
        drop(pages);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(store.calls(Operation::List), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_page_that_cannot_be_read_ends_the_list_after_the_pages_before_it() {
        let store = paged_store(10);
        store.fail_call(Operation::List, 3, || {
            StoreError::failed("a read of page 2", Plain("the test says so".into()))
        });
        let mut pages = Pages::new(Arc::new(store.clone()), options());
        assert_eq!(
            names(&mut pages).await,
            [
                Ok("h0".to_string()),
                Ok("h1".to_string()),
                Err("a read of page 2 failed".to_string())
            ]
        );
        assert_eq!(store.calls(Operation::List), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[should_panic(expected = "decoding page 1")]
    async fn a_panic_while_decoding_reaches_the_caller() {
        let store = paged_store(3);
        store.on(Operation::Decode, |call, _| {
            assert!(call.number != 2, "decoding page 1");
            Cue::pass()
        });
        let mut pages = Pages::new(Arc::new(store), options());
        names(&mut pages).await;
    }
}
