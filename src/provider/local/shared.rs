//! The one llama.cpp context that the engines share ([`SharedContext`]),
//! and the rounds in which their decodes go together ([`Rounds`]).
//!
//! Every engine serving a request puts its next tokens in a round (the token
//! it just generated, or a chunk of its prompt), and one thread, the
//! decoder, decodes the round's tokens in one batch for all of them: the
//! model's weights are read once per step, however many replies take a
//! step, on every core. One thread does every decode, so llama.cpp's
//! threads are one team that never competes with another for the cores.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::*;

/// A token to decode: its sequence, its position there, and whether its
/// logits are wanted.
#[derive(Debug, Clone, Copy)]
pub(super) struct Item {
    pub(super) token: LlamaToken,
    pub(super) pos: i32,
    pub(super) seq: i32,
    pub(super) logits: bool,
}

/// How long a round waits for an engine that serves a request but has not
/// put its tokens in yet (it may be loading a saved state, or sampling with
/// a grammar that filters the whole vocabulary), from the round's oldest
/// entry or the end of the last round, whichever is later; a generation
/// step takes 35–100 ms on two cores.
pub(super) const ROUND_PATIENCE: Duration = Duration::from_millis(10);

/// Tokens of a prompt in a round that has generation steps too: the steps
/// wait for them (64 tokens take about half a second on two cores, 256
/// about two).
pub(super) const SHARED_CHUNK: usize = 64;

/// What an entry's tokens are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Tokens of a request's prompt.
    Read,
    /// A generation step: the token a reply just drew, with any text given
    /// to it after that token (a JSON key the grammar forces), a few tokens
    /// at once; the last one's logits are wanted. `early` among a reply's
    /// first [`HEAD_START`] steps.
    Step { early: bool },
    /// Tokens read ahead of a request: they join a round but no round waits
    /// for them.
    Ahead,
}

/// Tokens of a reply during which no prompt is read beside its steps: enough
/// for a first evaluation's first score, or a speech's first words, to show
/// at once.
pub(super) const HEAD_START: u32 = 8;

/// What an entry gets back: the logits of its tokens that want them, in order.
type Decoded = Result<Vec<Vec<f32>>, String>;

/// How a round is decoded: the tokens of each entry taken, in order, to the
/// logits of those that want them, entry by entry.
pub(super) type DecodeFn<'f> = dyn Fn(&[&[Item]]) -> Result<Vec<Vec<Vec<f32>>>, String> + 'f;

struct Entry {
    ticket: u64,
    /// The place of its request in the order of prompt reading (see
    /// [`Rounds::serving`]).
    order: u64,
    /// Its tokens not yet decoded.
    items: Vec<Item>,
    kind: Kind,
    at: Instant,
    /// The logits of its tokens decoded so far that want them.
    rows: Vec<Vec<f32>>,
}

impl Entry {
    fn is_step(&self) -> bool {
        matches!(self.kind, Kind::Step { .. })
    }
}

/// The rounds: who serves, what waits to be decoded, and what came back.
/// The decode itself is given to [`Rounds::run`], so that the rules can be
/// tested without a model.
pub(super) struct Rounds {
    state: Mutex<RoundState>,
    changed: Condvar,
    /// Most tokens one decode takes.
    capacity: usize,
    /// See [`ROUND_PATIENCE`].
    patience: Duration,
}

#[derive(Default)]
struct RoundState {
    /// Engines serving a request: a round waits for each of them, at most
    /// [`ROUND_PATIENCE`].
    serving: usize,
    waiting: Vec<Entry>,
    done: HashMap<u64, Decoded>,
    tickets: u64,
    /// Requests served so far.
    requests: u64,
    /// When the last round's decode ended: its engines need a moment to
    /// take their next token before they are in again.
    last_round: Option<Instant>,
    closed: bool,
}

/// An engine serving a request, until dropped (see [`Rounds::serving`]).
pub(super) struct Serving<'r> {
    rounds: &'r Rounds,
    /// The request's place in the order of prompt reading.
    pub(super) order: u64,
}

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        self.rounds.lock().serving -= 1;
        self.rounds.changed.notify_all();
    }
}

impl Rounds {
    pub(super) fn new(capacity: usize) -> Self {
        Self::with_patience(capacity, ROUND_PATIENCE)
    }

    pub(super) fn with_patience(capacity: usize, patience: Duration) -> Self {
        Self { state: Mutex::new(RoundState::default()), changed: Condvar::new(), capacity: capacity.max(1), patience }
    }

    fn lock(&self) -> MutexGuard<'_, RoundState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An engine starts serving a request: rounds wait for its tokens until
    /// the guard is dropped. The guard's `order` is the request's place in
    /// the order of prompt reading: of the prompts waiting, the earliest
    /// request's is read first.
    pub(super) fn serving(&self) -> Serving<'_> {
        let mut state = self.lock();
        state.serving += 1;
        state.requests += 1;
        let order = state.requests;
        drop(state);
        self.changed.notify_all();
        Serving { rounds: self, order }
    }

    /// Entries submitted so far (tests: to know a thread's entry is in).
    #[cfg(test)]
    fn submitted(&self) -> u64 {
        self.lock().tickets
    }

    /// No engine serves a request and nothing waits to be decoded.
    pub(super) fn idle(&self) -> bool {
        let state = self.lock();
        state.serving == 0 && state.waiting.is_empty()
    }

    /// Puts `items` of the request with `order` in a round and waits until
    /// they are decoded (see [`Rounds::run`]); returns the logits of those
    /// that want them.
    pub(super) fn submit(&self, items: Vec<Item>, order: u64, kind: Kind) -> Decoded {
        let mut state = self.lock();
        if state.closed {
            return Err("the local model stopped".to_string());
        }
        let ticket = state.tickets;
        state.tickets += 1;
        state.waiting.push(Entry { ticket, order, items, kind, at: Instant::now(), rows: Vec::new() });
        self.changed.notify_all();
        loop {
            if let Some(result) = state.done.remove(&ticket) {
                return result;
            }
            if state.closed {
                return Err("the local model stopped".to_string());
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The decoder's loop, until [`Rounds::close`]: once every serving
    /// engine has put its tokens in (or the oldest entry has waited
    /// [`ROUND_PATIENCE`]), decodes a round with `decode`. A round takes
    /// every generation step waiting, then the next tokens of the prompt of
    /// the earliest request:
    /// [`SHARED_CHUNK`] of them beside steps, else as many as the batch holds
    /// (one prompt is read at a time, so the first reply starts soonest);
    /// with no prompt waiting, tokens read ahead. No prompt is read beside a
    /// reply's first [`HEAD_START`] tokens. What is not taken waits for the
    /// next round.
    pub(super) fn run(&self, decode: &DecodeFn<'_>) {
        let mut state = self.lock();
        loop {
            if state.closed {
                return;
            }
            match state.ready(self.patience) {
                Some(wait) if wait.is_zero() => {}
                Some(wait) => {
                    state = self.changed.wait_timeout(state, wait).unwrap_or_else(|p| p.into_inner()).0;
                    continue;
                }
                None => {
                    state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
                    continue;
                }
            }
            let taken = self.take(&mut state);
            drop(state);
            let items: Vec<&[Item]> = taken.iter().map(|(_, items)| items.as_slice()).collect();
            let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode(&items)))
                .unwrap_or_else(|_| Err("llama.cpp failed while decoding".to_string()))
                .and_then(|rows| {
                    if rows.len() == taken.len() {
                        Ok(rows)
                    } else {
                        Err("a decode returned too few results".to_string())
                    }
                });
            state = self.lock();
            state.last_round = Some(Instant::now());
            state.post(&taken, decoded);
            self.changed.notify_all();
        }
    }

    /// Takes the tokens of the next round out of the waiting entries.
    fn take(&self, state: &mut RoundState) -> Vec<(u64, Vec<Item>)> {
        let mut plan: Vec<(usize, usize)> =
            state.waiting.iter().enumerate().filter(|(_, e)| e.is_step()).map(|(i, e)| (i, e.items.len())).collect();
        let steps: usize = plan.iter().map(|&(_, n)| n).sum();
        let room = self.capacity.saturating_sub(steps).max(1);
        // A reply in its first tokens goes without prompts beside it.
        let early = state.waiting.iter().any(|e| e.kind == Kind::Step { early: true });
        let oldest_read = state
            .waiting
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == Kind::Read)
            .min_by_key(|(_, e)| (e.order, e.ticket))
            .map(|(i, _)| i);
        if !early {
            if let Some(i) = oldest_read {
                let budget = if steps > 0 { SHARED_CHUNK.min(room) } else { room };
                plan.push((i, state.waiting[i].items.len().min(budget)));
            } else if let Some(i) = state.waiting.iter().position(|e| e.kind == Kind::Ahead) {
                plan.push((i, state.waiting[i].items.len().min(room)));
            }
        }
        plan.iter()
            .map(|&(i, n)| {
                let entry = &mut state.waiting[i];
                (entry.ticket, entry.items.drain(..n).collect())
            })
            .collect()
    }

    /// Stops the decoder; entries waiting and later ones fail.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }
}

impl RoundState {
    /// When the waiting entries may be decoded: at once (zero) when every
    /// serving engine has put its tokens in, else once the oldest entry has
    /// waited `patience`, counted from the end of the last round at the
    /// earliest; `None` when nothing waits. Counting from the last round
    /// keeps the engines in step: an entry that came in while a round was
    /// decoded waits for the engines of that round to take their next
    /// token, rather than going alone and leaving them the next round
    /// alone in turn.
    fn ready(&self, patience: Duration) -> Option<Duration> {
        let oldest = self.waiting.iter().map(|e| e.at).min()?;
        let in_round = self.waiting.iter().filter(|e| e.kind != Kind::Ahead).count();
        if in_round >= self.serving {
            return Some(Duration::ZERO);
        }
        let since = self.last_round.map_or(oldest, |end| end.max(oldest));
        Some(patience.saturating_sub(since.elapsed()))
    }

    /// Hands the logits of a round to its entries, and completes those with
    /// no token left; a failed round fails every entry in it.
    fn post(&mut self, taken: &[(u64, Vec<Item>)], decoded: Result<Vec<Vec<Vec<f32>>>, String>) {
        match decoded {
            Ok(rows) => {
                for ((ticket, _), rows) in taken.iter().zip(rows) {
                    let Some(i) = self.waiting.iter().position(|e| e.ticket == *ticket) else { continue };
                    self.waiting[i].rows.extend(rows);
                    if self.waiting[i].items.is_empty() {
                        let entry = self.waiting.remove(i);
                        self.done.insert(entry.ticket, Ok(entry.rows));
                    }
                }
            }
            Err(e) => {
                for (ticket, _) in taken {
                    self.waiting.retain(|entry| entry.ticket != *ticket);
                    self.done.insert(*ticket, Err(e.clone()));
                }
            }
        }
    }
}

/// The context the engines share, behind a lock, and its rounds.
pub(super) struct SharedContext<'m> {
    ctx: Mutex<LlamaContext<'m>>,
    pub(super) rounds: Rounds,
    /// The model's tokens that hold East Asian characters (see
    /// [`super::scripts`]), found when the model is loaded: found at a
    /// request instead, the scan held up its first step long enough for a
    /// round to read another request's prompt chunk first (7 s before the
    /// first score of the sample panel).
    pub(super) east_asian: Arc<[LlamaToken]>,
}

impl<'m> SharedContext<'m> {
    pub(super) fn new(ctx: LlamaContext<'m>, capacity: usize, east_asian: Arc<[LlamaToken]>) -> Self {
        Self { ctx: Mutex::new(ctx), rounds: Rounds::new(capacity), east_asian }
    }

    /// The context, for what is not a decode (the cache's sequences, saved
    /// states); waits while a round is decoded.
    pub(super) fn lock(&self) -> MutexGuard<'_, LlamaContext<'m>> {
        self.ctx.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Decodes `items` of the request with `order` in a round (see
    /// [`Rounds::submit`]).
    pub(super) fn decode(&self, items: Vec<Item>, order: u64, kind: Kind) -> Decoded {
        self.rounds.submit(items, order, kind)
    }

    /// The decoder thread's work, until the rounds are closed.
    pub(super) fn run_decoder(&self) {
        self.rounds.run(&|entries| self.decode_now(entries));
    }

    /// Decodes the entries' tokens, ordered by sequence: llama.cpp puts
    /// tokens of several sequences in one step only when their ids follow
    /// each other in the batch (0, 1, 2; see [`ModelContext::new`] for how
    /// ids are given out). A prompt chunk goes in a decode of its own, after
    /// the generation steps: in one batch, llama.cpp would split the chunk's
    /// first token off into the steps' micro-batch and decode the rest
    /// apart anyway, which took 25–40 ms more than the two decodes (see
    /// *Engines and rounds* in docs/local-model.md).
    fn decode_now(&self, entries: &[&[Item]]) -> Result<Vec<Vec<Vec<f32>>>, String> {
        let (chunks, steps): (Vec<usize>, Vec<usize>) =
            (0..entries.len()).partition(|&e| entries[e].len() > SEPARATE_FROM);
        let mut rows: Vec<Vec<Vec<f32>>> = entries.iter().map(|_| Vec::new()).collect();
        let mut ctx = self.lock();
        let started = Instant::now();
        let mut decodes = 0;
        for group in [steps, chunks] {
            let mut order: Vec<(usize, usize)> =
                group.iter().flat_map(|&e| (0..entries[e].len()).map(move |i| (e, i))).collect();
            if order.is_empty() {
                continue;
            }
            order.sort_by_key(|&(e, i)| (entries[e][i].seq, entries[e][i].pos));
            let mut batch = LlamaBatch::new(order.len(), 1);
            for &(e, i) in &order {
                let item = entries[e][i];
                batch.add(item.token, item.pos, &[item.seq], item.logits).map_err(|e| e.to_string())?;
            }
            ctx.decode(&mut batch).map_err(|e| e.to_string())?;
            decodes += 1;
            // Within an entry, the batch keeps its tokens' order.
            for (n, &(e, i)) in order.iter().enumerate() {
                if entries[e][i].logits {
                    rows[e].push(ctx.get_logits_ith(i32::try_from(n).unwrap_or(i32::MAX)).to_vec());
                }
            }
        }
        tracing::trace!(
            entries = entries.len(),
            tokens = entries.iter().map(|e| e.len()).sum::<usize>(),
            decodes,
            seqs = ?entries.iter().flat_map(|e| e.iter().map(|i| i.seq)).collect::<std::collections::BTreeSet<_>>(),
            ms = started.elapsed().as_millis() as u64,
            "local model: round decoded"
        );
        Ok(rows)
    }
}

/// Entries of more tokens than this (prompt chunks) are decoded apart from
/// the generation steps of a round (see [`SharedContext::decode_now`]); a
/// step with the text given to it is shorter.
const SEPARATE_FROM: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn item(seq: i32, logits: bool) -> Item {
        Item { token: LlamaToken(seq), pos: 0, seq, logits }
    }

    type Calls = Arc<Mutex<Vec<Vec<i32>>>>;

    /// Rounds with a decoder thread whose decode records the sequences of
    /// each call and answers each wanted logit with its sequence number.
    fn decoder(capacity: usize) -> (Arc<Rounds>, Calls) {
        decoder_with(Rounds::new(capacity))
    }

    fn decoder_with(rounds: Rounds) -> (Arc<Rounds>, Calls) {
        decoder_taking(rounds, Duration::from_millis(5))
    }

    /// The sequences of one recorded decode, in order.
    fn sorted(seqs: &[i32]) -> Vec<i32> {
        let mut seqs = seqs.to_vec();
        seqs.sort_unstable();
        seqs
    }

    /// A decoder whose every decode takes `time`.
    fn decoder_taking(rounds: Rounds, time: Duration) -> (Arc<Rounds>, Calls) {
        let rounds = Arc::new(rounds);
        let calls: Calls = Arc::default();
        let (r, c) = (rounds.clone(), calls.clone());
        std::thread::spawn(move || {
            r.run(&|entries: &[&[Item]]| {
                c.lock().unwrap().push(entries.iter().flat_map(|e| e.iter().map(|i| i.seq)).collect());
                std::thread::sleep(time);
                Ok(entries
                    .iter()
                    .map(|e| e.iter().filter(|i| i.logits).map(|i| vec![i.seq as f32]).collect())
                    .collect())
            });
        });
        (rounds, calls)
    }

    #[test]
    fn the_steps_of_every_serving_engine_go_in_one_decode() {
        let (rounds, calls) = decoder(64);
        let guards: Vec<_> = (0..3).map(|_| rounds.serving()).collect();
        let handles: Vec<_> = (0..3)
            .map(|seq| {
                let rounds = rounds.clone();
                std::thread::spawn(move || {
                    // The third engine comes late, within the patience.
                    if seq == 2 {
                        std::thread::sleep(ROUND_PATIENCE / 4);
                    }
                    rounds.submit(vec![item(seq, true)], 0, Kind::Step { early: false }).unwrap()
                })
            })
            .collect();
        let answers: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(answers, [vec![vec![0.0]], vec![vec![1.0]], vec![vec![2.0]]], "each gets its own logits");
        let calls = calls.lock().unwrap();
        assert_eq!(calls.len(), 1, "one decode for all three: {calls:?}");
        assert_eq!(sorted(&calls[0]), [0, 1, 2]);
        drop(guards);
        rounds.close();
    }

    #[test]
    fn an_entry_that_came_during_a_round_waits_for_the_engines_of_that_round() {
        let patience = Duration::from_millis(150);
        let (rounds, calls) = decoder_taking(Rounds::with_patience(64, patience), Duration::from_millis(400));
        let _serving = (rounds.serving(), rounds.serving());
        let late = {
            let rounds = rounds.clone();
            std::thread::spawn(move || {
                // Comes while engine 1's first step is decoded, and has
                // waited longer than the patience when that decode ends.
                std::thread::sleep(patience + Duration::from_millis(50));
                rounds.submit(vec![item(0, true)], 0, Kind::Step { early: false }).unwrap()
            })
        };
        // Engine 1 goes alone once the patience is over, then steps again
        // as soon as its token is back.
        rounds.submit(vec![item(1, true)], 0, Kind::Step { early: false }).unwrap();
        rounds.submit(vec![item(1, true)], 0, Kind::Step { early: false }).unwrap();
        late.join().unwrap();
        let calls = calls.lock().unwrap();
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(sorted(&calls[1]), [0, 1], "the waiting entry went with engine 1's next step, not alone before it");
        drop(calls);
        rounds.close();
    }

    #[test]
    fn text_given_to_a_reply_goes_whole_in_one_step() {
        let (rounds, calls) = decoder(64);
        let _serving = (rounds.serving(), rounds.serving());
        let given = {
            let rounds = rounds.clone();
            std::thread::spawn(move || {
                let items = vec![item(0, false), item(0, false), item(0, true)];
                rounds.submit(items, 0, Kind::Step { early: false }).unwrap()
            })
        };
        let step = rounds.submit(vec![item(1, true)], 0, Kind::Step { early: false }).unwrap();
        assert_eq!((given.join().unwrap(), step), (vec![vec![0.0]], vec![vec![1.0]]), "the last token's logits");
        let calls = calls.lock().unwrap();
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(sorted(&calls[0]), [0, 0, 0, 1]);
        drop(calls);
        rounds.close();
    }

    #[test]
    fn a_round_waits_for_a_missing_engine_only_its_patience() {
        let (rounds, _) = decoder(64);
        let _serving = (rounds.serving(), rounds.serving());
        let started = Instant::now();
        let answer = rounds.submit(vec![item(4, true)], 0, Kind::Step { early: false }).unwrap();
        assert_eq!(answer, [vec![4.0]]);
        assert!(started.elapsed() >= ROUND_PATIENCE, "it waited for the other engine");
        assert!(started.elapsed() < ROUND_PATIENCE * 20, "but not for long");
        rounds.close();
    }

    #[test]
    fn reading_ahead_joins_a_round_without_holding_it_up() {
        // A patience that a loaded machine's scheduling does not outlast.
        let patience = Duration::from_millis(300);
        let (rounds, calls) = decoder_with(Rounds::with_patience(64, patience));
        let serving = rounds.serving();
        assert!(!rounds.idle());
        let decoded = Arc::new(AtomicUsize::new(0));
        let ahead = {
            let (rounds, decoded) = (rounds.clone(), decoded.clone());
            std::thread::spawn(move || {
                let got = rounds.submit(vec![item(7, false), item(7, false)], 0, Kind::Ahead).unwrap();
                decoded.fetch_add(1, Ordering::SeqCst);
                got
            })
        };
        std::thread::sleep(patience / 6);
        assert_eq!(decoded.load(Ordering::SeqCst), 0, "the tokens read ahead wait for the serving engine's step");
        let step = rounds.submit(vec![item(1, true)], 0, Kind::Step { early: false }).unwrap();
        assert_eq!(step, [vec![1.0]]);
        assert_eq!(ahead.join().unwrap(), Vec::<Vec<f32>>::new(), "no logits were wanted");
        assert_eq!(calls.lock().unwrap().len(), 1, "one decode took both");
        drop(serving);
        assert!(rounds.idle());
        // With nobody serving, reading ahead goes at once.
        let started = Instant::now();
        rounds.submit(vec![item(7, false)], 0, Kind::Ahead).unwrap();
        assert!(started.elapsed() < patience);
        rounds.close();
        assert!(
            rounds.submit(vec![item(1, true)], 0, Kind::Step { early: false }).is_err(),
            "once closed, nothing is decoded"
        );
    }

    #[test]
    fn a_prompt_is_read_a_chunk_a_round_beside_the_steps_the_oldest_prompt_first() {
        // A patience long enough that the first round waits for all three
        // engines however slowly the threads are scheduled.
        let (rounds, calls) = decoder_with(Rounds::with_patience(SHARED_CHUNK + 3, Duration::from_millis(500)));
        let serving = (rounds.serving(), rounds.serving(), rounds.serving());
        assert_eq!((serving.0.order, serving.1.order, serving.2.order), (1, 2, 3), "requests in the order they start");
        let prompt = |seq: i32, len: usize| {
            let mut items = vec![item(seq, false); len];
            items[len - 1].logits = true;
            items
        };
        let spawn = |items: Vec<Item>, order: u64| {
            let rounds = rounds.clone();
            std::thread::spawn(move || rounds.submit(items, order, Kind::Read).unwrap())
        };
        // The younger request's prompt is put in first; the older's goes first.
        let entered = |n: u64| {
            while rounds.submitted() < n {
                std::thread::sleep(Duration::from_micros(100));
            }
        };
        let younger = spawn(prompt(3, 10), 2);
        entered(1);
        let older = spawn(prompt(2, 100), 1);
        entered(2);
        let step = rounds.submit(vec![item(1, true)], 0, Kind::Step { early: false }).unwrap();
        assert_eq!(step, [vec![1.0]]);
        assert_eq!(older.join().unwrap(), [vec![2.0]], "a prompt's last token's logits, once all of it is read");
        assert_eq!(younger.join().unwrap(), [vec![3.0]]);
        let calls = calls.lock().unwrap();
        let shape: Vec<Vec<(i32, usize)>> = calls
            .iter()
            .map(|seqs| {
                let mut counts = std::collections::BTreeMap::new();
                for s in seqs {
                    *counts.entry(*s).or_insert(0) += 1;
                }
                counts.into_iter().collect()
            })
            .collect();
        assert_eq!(
            shape,
            [vec![(1, 1), (2, SHARED_CHUNK)], vec![(2, 100 - SHARED_CHUNK)], vec![(3, 10)]],
            "the step with a shared chunk of the older request's prompt, then the rest of it alone, then the younger's"
        );
        drop(serving);
        rounds.close();
    }

    #[test]
    fn no_prompt_is_read_beside_a_reply_s_first_tokens() {
        // Rounds wait for both engines (no patience runs out here).
        let (rounds, calls) = decoder_with(Rounds::with_patience(SHARED_CHUNK + 3, Duration::from_secs(30)));
        let serving = (rounds.serving(), rounds.serving());
        let reader = {
            let rounds = rounds.clone();
            std::thread::spawn(move || rounds.submit(vec![item(2, false); 10], 2, Kind::Read).unwrap())
        };
        std::thread::sleep(Duration::from_millis(2));
        rounds.submit(vec![item(1, true)], 1, Kind::Step { early: true }).unwrap();
        rounds.submit(vec![item(1, true)], 1, Kind::Step { early: false }).unwrap();
        reader.join().unwrap();
        let calls = calls.lock().unwrap();
        assert_eq!(calls[0], [1], "the first token alone");
        assert_eq!(calls[1].len(), 11, "then the prompt beside the next step: {:?}", calls[1]);
        drop(serving);
        rounds.close();
    }

    #[test]
    fn a_failed_decode_fails_each_entry_of_its_round() {
        for (fails, expected) in [(true, "no room"), (false, "llama.cpp failed while decoding")] {
            let rounds = Arc::new(Rounds::new(8));
            let r = rounds.clone();
            std::thread::spawn(move || {
                r.run(&|_: &[&[Item]]| if fails { Err("no room".to_string()) } else { panic!("llama.cpp aborts") })
            });
            assert_eq!(rounds.submit(vec![item(1, true)], 0, Kind::Step { early: false }), Err(expected.to_string()));
            rounds.close();
        }
    }
}
