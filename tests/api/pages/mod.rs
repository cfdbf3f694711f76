//! The console's and `/docs` pages in a real headless Chromium over chromedriver
//! (`make test-ui`; `scripts/browser.sh` installs them).

mod console;
mod docs;
mod editing;
mod lifecycle;
mod lifecycle_lists;
mod operator;
mod operator_charts;
mod replays;
mod reverification;
mod spaces;
mod workflow;
