//! Checks of the code and the harness themselves: the architecture's layering read from the
//! sources (and the benchmark's modules, `bench_modules`; the JSON API and the console apart, `front_ends`), the example consumer, the event schemas of docs/events.md against real events,
//! and the test harness's own clean-up. Part of the parallel run.

mod architecture;
mod bench_modules;
mod cloudevents;
mod consumer;
mod dev_docs;
mod event_docs;
mod front_ends;
mod harness;
mod versions;
