//! The report of a run: its rows, ratios, notes and goals, printed and written as Markdown
//! and JSON under target/bench/.

use serde::Serialize;
use serde_json::json;

use super::figures::Figures;

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
        md.push_str(&format!(
            "\nMedians of {} rounds after one warm-up round; latencies in milliseconds.\n",
            super::ROUNDS
        ));
        println!("{md}");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join("bench");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("report.md"), &md)?;
        let json = json!({ "report": self, "peak_rss_mib": peak_rss_mib });
        std::fs::write(
            dir.join("report.json"),
            serde_json::to_string_pretty(&json)?,
        )?;
        eprintln!("written to {}", dir.display());
        Ok(())
    }
}
