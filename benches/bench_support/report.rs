//! The report of a run: its rows, ratios, notes and goals, printed and written as Markdown
//! and JSON under target/bench/ (the smoke run's under target/bench/smoke/, marked as no
//! measurement).

use serde::Serialize;
use serde_json::json;

use super::drive::{round_count, warm_ups};
use super::figures::Figures;
use super::kind::{report_dir, smoke};

/// What the smoke run's report says first, and its JSON copy says too.
const SMOKE: &str = "**Smoke run** (`make bench-smoke`: the debug build, tiny sizes, one \
                     round, no warm-up): not a measurement. It shows that every group of rows \
                     still produces its figures; the figures themselves mean nothing.";

/// How many rows, ratios, notes and goals a report holds (see [`Report::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pub rows: usize,
    pub ratios: usize,
    pub notes: usize,
    pub goals: usize,
}

impl std::fmt::Display for Mark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Mark {
            rows,
            ratios,
            notes,
            goals,
        } = self;
        write!(
            f,
            "{rows} rows, {ratios} ratios, {notes} notes, {goals} goals"
        )
    }
}

#[derive(Default, Serialize)]
pub struct Report {
    rows: Vec<Row>,
    ratios: Vec<(String, f64)>,
    notes: Vec<String>,
    goals: Vec<Goal>,
}

/// One figure of this run against its target.
#[derive(Serialize)]
struct Goal {
    figure: String,
    measured: String,
    goal: String,
    met: bool,
}

#[derive(Serialize)]
struct Row {
    measure: String,
    concurrency: usize,
    figures: Figures,
    ratio: Option<(String, f64)>,
}

impl Report {
    pub fn row(
        &mut self,
        measure: &str,
        concurrency: usize,
        f: &Figures,
        ratio: Option<(&str, f64)>,
    ) {
        eprintln!(
            "  {measure} @ {concurrency}: {:.0} ops/s, p50 {:.3} ms, p99 {:.3} ms, errors {}",
            f.ops_per_sec, f.p50_ms, f.p99_ms, f.errors
        );
        self.rows.push(Row {
            measure: measure.into(),
            concurrency,
            figures: f.clone(),
            ratio: ratio.map(|(k, v)| (k.to_string(), v)),
        });
    }

    pub fn ratio(&mut self, what: &str, v: f64) {
        self.ratios.push((what.into(), v));
    }

    pub fn note(&mut self, s: String) {
        eprintln!("  {s}");
        self.notes.push(s);
    }

    /// A figure of this run, its target, and whether it meets it.
    pub fn goal(&mut self, figure: &str, measured: String, goal: &str, met: bool) {
        eprintln!(
            "  goal: {figure}: {measured} (goal {goal}): {}",
            if met { "met" } else { "MISSED" }
        );
        self.goals.push(Goal {
            figure: figure.into(),
            measured,
            goal: goal.into(),
            met,
        });
    }

    /// How far the report has come: its rows, ratios, notes and goals so far.
    pub fn mark(&self) -> Mark {
        Mark {
            rows: self.rows.len(),
            ratios: self.ratios.len(),
            notes: self.notes.len(),
            goals: self.goals.len(),
        }
    }

    /// The smoke run's check of what `group` added since `mark`: at least one row, note or
    /// goal, every row with operations counted, and every figure a number (no NaN, no
    /// infinity). Returns what it added.
    pub fn check_since(&self, mark: Mark, group: &str) -> anyhow::Result<Mark> {
        let added = Mark {
            rows: self.rows.len() - mark.rows,
            ratios: self.ratios.len() - mark.ratios,
            notes: self.notes.len() - mark.notes,
            goals: self.goals.len() - mark.goals,
        };
        anyhow::ensure!(
            added.rows + added.notes + added.goals > 0,
            "{group}: no rows, notes or goals"
        );
        for r in &self.rows[mark.rows..] {
            let f = &r.figures;
            let numbers = [f.ops_per_sec, f.p50_ms, f.p99_ms];
            let ratio = r.ratio.as_ref().map_or(0.0, |(_, v)| *v);
            anyhow::ensure!(
                f.ops > 0
                    && f.ops_per_sec > 0.0
                    && numbers.iter().chain([&ratio]).all(|v| v.is_finite()),
                "{group}: row {:?} at {}: {f:?}, ratio {ratio}",
                r.measure,
                r.concurrency
            );
        }
        for (what, v) in &self.ratios[mark.ratios..] {
            anyhow::ensure!(v.is_finite(), "{group}: ratio {what:?} is {v}");
        }
        let texts = self.notes[mark.notes..].iter();
        let measured = self.goals[mark.goals..].iter().map(|g| &g.measured);
        for text in texts.chain(measured) {
            let words = text.split(|c: char| !(c.is_alphanumeric() || c == '-'));
            anyhow::ensure!(
                !words
                    .into_iter()
                    .any(|w| ["NaN", "inf", "-inf"].contains(&w)),
                "{group}: a figure that is no number in {text:?}"
            );
        }
        Ok(added)
    }

    fn goals_table(&self) -> String {
        let mut md = String::from("\n| figure | this run | goal | met |\n|---|---|---|---|\n");
        for g in &self.goals {
            let met = if g.met { "yes" } else { "**no**" };
            md.push_str(&format!(
                "| {} | {} | {} | {met} |\n",
                g.figure, g.measured, g.goal
            ));
        }
        md
    }

    pub fn write(&self, peak_rss_mib: f64) -> anyhow::Result<()> {
        let mut md = String::from(
            "| measure | conc | ops/s | p50 ms | p99 ms | errors | ratio |\n|---|---:|---:|---:|---:|---:|---|\n",
        );
        for r in &self.rows {
            let f = &r.figures;
            let ratio = r
                .ratio
                .as_ref()
                .map(|(k, v)| format!("{v:.2}x {k}"))
                .unwrap_or_default();
            md.push_str(&format!(
                "| {} | {} | {:.0} | {:.3} | {:.3} | {} | {} |\n",
                r.measure, r.concurrency, f.ops_per_sec, f.p50_ms, f.p99_ms, f.errors, ratio
            ));
        }
        md.push('\n');
        for (k, v) in &self.ratios {
            md.push_str(&format!("- {k}: {v:.2}x\n"));
        }
        for n in &self.notes {
            md.push_str(&format!("- {n}\n"));
        }
        md.push_str(&self.goals_table());
        let rounds = match warm_ups() {
            0 => format!("One round of {}, no warm-up", round_count()),
            _ => format!("Medians of {} rounds after a warm-up round", round_count()),
        };
        md.push_str(&format!("\n{rounds}; latencies in milliseconds.\n"));
        if smoke() {
            md = format!("{SMOKE}\n\n{md}");
        }
        println!("{md}");
        let dir = report_dir();
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("report.md"), &md)?;
        let mut json = json!({ "report": self, "peak_rss_mib": peak_rss_mib });
        if smoke() {
            json["smoke"] = SMOKE.into();
        }
        std::fs::write(
            dir.join("report.json"),
            serde_json::to_string_pretty(&json)?,
        )?;
        eprintln!("written to {}", dir.display());
        Ok(())
    }
}
