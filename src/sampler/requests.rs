//! Requests, from other threads, for a run's recent samples while it goes on (`top`'s refresh,
//! a flight recorder's SIGUSR1 dump), answered by the sampling thread between two reads.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

use crate::samples::profile::Profile;
use crate::samples::stalls::Stall;

/// A request, from another thread, for the profile of the last `seconds` of a run (`None`: all
/// it kept), or with `whole` of everything since its start, and with `stalls` (a least length
/// in seconds) the stalls of what it kept in time order; answered between two reads.
pub struct Request {
    pub seconds: Option<f64>,
    pub whole: bool,
    pub stalls: Option<f64>,
    pub reply: Sender<Answer>,
}

/// What a `Request` gets.
pub struct Answer {
    pub profile: Profile,
    /// The stalls asked for, in the order they began (the last one may be going on), of the
    /// run's whole profile; none without a recording.
    pub stalls: Vec<Stall>,
}

/// Where a run's requests wait until it answers them.
#[derive(Default)]
pub struct Inbox(Option<Mutex<Receiver<Request>>>);

impl Inbox {
    /// Opens the inbox: where to send requests.
    pub fn open(&mut self) -> Sender<Request> {
        let (tx, rx) = channel();
        self.0 = Some(Mutex::new(rx));
        tx
    }

    /// Answers each request waiting with `answer`.
    pub fn answer(&self, answer: impl Fn(&Request) -> Answer) {
        let Some(Ok(requests)) = self.0.as_ref().map(|r| r.lock()) else {
            return;
        };
        while let Ok(request) = requests.try_recv() {
            // The asker may have given up waiting: nothing to do then.
            let _ = request.reply.send(answer(&request));
        }
    }
}
