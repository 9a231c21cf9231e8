//! The hetdsl `tracing` events of a piece of code, collected by a small `Layer` installed as
//! the process's subscriber (device threads emit the events, so a thread-local default would
//! miss them).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// One event: its message and its fields, as text.
#[derive(Debug, Clone)]
pub struct Event {
    pub message: String,
    pub fields: BTreeMap<String, String>,
}

impl Event {
    pub fn number(&self, name: &str) -> u64 {
        let v = self.fields.get(name).unwrap_or_else(|| panic!("no field {name} in {self:?}"));
        v.parse().unwrap_or_else(|_| panic!("field {name} = {v} is not a whole number"))
    }
    pub fn seconds(&self) -> f64 {
        self.fields.get("seconds").and_then(|s| s.parse().ok()).unwrap_or(f64::NAN)
    }
}

struct Collect(Arc<Mutex<Vec<Event>>>);

struct Fields<'a>(&'a mut Event);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        match field.name() {
            "message" => self.0.message = text,
            name => {
                self.0.fields.insert(name.to_string(), text);
            }
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }
}

/// Makes the collector panic on every event: a subscriber's bug (or tracing-subscriber's own
/// `eprintln!` on a closed stderr) must not unwind through the dispatcher.
pub static PANIC_ON_EVENT: AtomicBool = AtomicBool::new(false);

impl<S: tracing::Subscriber> Layer<S> for Collect {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if !event.metadata().target().starts_with("hetdsl") {
            return;
        }
        if PANIC_ON_EVENT.load(Ordering::Relaxed) {
            panic!("a subscriber that panics");
        }
        let mut e = Event { message: String::new(), fields: BTreeMap::new() };
        event.record(&mut Fields(&mut e));
        if let Ok(mut all) = self.0.lock() {
            all.push(e);
        }
    }
}

/// The events of one run of `f`: tests run one at a time through the lock, since the
/// subscriber is the whole process's.
pub fn events_of(f: impl FnOnce()) -> Vec<Event> {
    static SINK: OnceLock<Arc<Mutex<Vec<Event>>>> = OnceLock::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let sink = SINK.get_or_init(|| {
        let sink = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Collect(sink.clone()));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        sink
    });
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    sink.lock().unwrap_or_else(|e| e.into_inner()).clear();
    f();
    std::mem::take(&mut *sink.lock().unwrap_or_else(|e| e.into_inner()))
}
