//! manifest.csv: one row per matrix point — the columns every row has (`CORE`), and the
//! columns of the point's kind (its own and one per sweep axis), in the order the run's header
//! gives them. The header is the run's to choose (the kinds' `manifest_columns`); a reader
//! takes any header that holds the core columns.

use std::path::Path;

use crate::results::collect::csv_lines;

/// The columns every manifest has, whatever its kinds.
pub const CORE: &[&str] = &[
    "run_id",
    "lane",
    "repeat_index",
    "log_path",
    "status",
    "exit_code",
    "reason",
];

/// One point's row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    pub run_id: String,
    pub lane: String,
    pub repeat_index: i64,
    pub log_path: String,
    pub status: String,
    pub exit_code: String,
    /// Why a point failed (expr's addition to RecStore's columns).
    pub reason: String,
    /// The kind's columns (and the sweep axes), by name.
    pub cols: Vec<(String, String)>,
}

impl Row {
    /// Set the row's status and reason: the reason's first line (the terminal's line; a row
    /// is one line).
    pub fn set_status(&mut self, status: &str, why: &str) {
        self.status = status.to_string();
        self.reason = why.lines().next().unwrap_or("").to_string();
    }

    /// The value of a column (core or the kind's); empty when the row has none.
    pub fn get(&self, column: &str) -> &str {
        match column {
            "run_id" => &self.run_id,
            "lane" => &self.lane,
            "log_path" => &self.log_path,
            "status" => &self.status,
            "exit_code" => &self.exit_code,
            "reason" => &self.reason,
            _ => self
                .cols
                .iter()
                .find(|(k, _)| k == column)
                .map(|(_, v)| v.as_str())
                .unwrap_or(""),
        }
    }

    /// A column's value as manifest.csv writes it.
    pub fn value(&self, column: &str) -> String {
        match column {
            "repeat_index" => self.repeat_index.to_string(),
            c => self.get(c).to_string(),
        }
    }
}

/// Write the rows under `columns` (every core column and the kinds'); one atomic replacement.
pub fn write(path: &Path, columns: &[String], rows: &[Row]) -> Result<(), String> {
    // the whole table in memory, then one atomic replacement (a failed write, as on a full
    // disk, leaves the old manifest and no temporary file)
    let mut w = csv::Writer::from_writer(Vec::new());
    // the header even without rows (a run interrupted before its first point)
    w.write_record(columns).map_err(|e| e.to_string())?;
    for r in rows {
        w.write_record(columns.iter().map(|c| r.value(c)))
            .map_err(|e| e.to_string())?;
    }
    let bytes = w.into_inner().map_err(|e| e.to_string())?;
    super::atomic::write(path, &bytes)
}

/// The header and rows of a manifest, skipping rows that do not read; nothing when the file
/// does not read.
pub fn read_table(path: &Path) -> (Vec<String>, Vec<Row>) {
    match table(path) {
        Ok(Some((h, rows))) => (h, rows.into_iter().filter_map(Result::ok).collect()),
        _ => (Vec::new(), Vec::new()),
    }
}

pub fn read(path: &Path) -> Vec<Row> {
    read_table(path).1
}

/// The rows of a manifest, or the first line that is not one (`manifest.csv:LINE: why`).
/// A missing file is `Ok(None)`.
pub fn read_checked(path: &Path) -> Result<Option<Vec<Row>>, String> {
    let Some((_, rows)) = table(path)? else {
        return Ok(None);
    };
    rows.into_iter()
        .collect::<Result<Vec<Row>, String>>()
        .map(Some)
}

/// A manifest's header as the file has it, and its rows.
pub type Headed = (Vec<String>, Vec<Row>);

/// [`read_checked`], with the header as the file has it.
pub fn read_checked_with_header(path: &Path) -> Result<Option<Headed>, String> {
    let Some((header, rows)) = table(path)? else {
        return Ok(None);
    };
    rows.into_iter()
        .collect::<Result<Vec<Row>, String>>()
        .map(|rows| Some((header, rows)))
}

type Table = (Vec<String>, Vec<Result<Row, String>>);

fn table(path: &Path) -> Result<Option<Table>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let name = path.display().to_string();
    let (mut r, mut at) = csv_lines::reader(path)?;
    let header: Vec<String> = r
        .headers()
        .map_err(|e| at.error(&name, &e))?
        .iter()
        .map(str::to_string)
        .collect();
    if let Some(c) = CORE.iter().find(|c| !header.iter().any(|h| h == *c)) {
        // the header is the first line that is not blank
        let line = at.of(&csv::Position::new());
        return Err(format!(
            "{name}:{line}: not a manifest header (it lacks `{c}`; every manifest has {})",
            CORE.join(",")
        ));
    }
    let rows = r
        .records()
        .map(|rec| {
            let rec = rec.map_err(|e| at.error(&name, &e))?;
            let line = rec.position().map_or(0, |p| at.of(p));
            if rec.len() != header.len() {
                return Err(format!(
                    "{name}:{line}: {} fields where the header has {}",
                    rec.len(),
                    header.len()
                ));
            }
            let mut row = Row::default();
            for (k, v) in header.iter().zip(rec.iter()) {
                let v = v.to_string();
                match k.as_str() {
                    "run_id" => row.run_id = v,
                    "lane" => row.lane = v,
                    "repeat_index" => {
                        row.repeat_index = v.parse().map_err(|_| {
                            format!("{name}:{line}: repeat_index `{v}` is not an integer")
                        })?
                    }
                    "log_path" => row.log_path = v,
                    "status" => row.status = v,
                    "exit_code" => row.exit_code = v,
                    "reason" => row.reason = v,
                    _ => row.cols.push((k.clone(), v)),
                }
            }
            Ok(row)
        })
        .collect();
    Ok(Some((header, rows)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_goes_under_its_header_and_comes_back_with_its_kind_columns() {
        let (_d, p) = crate::util::testutil::temp_path("manifest.csv");
        let cols: Vec<String> = [
            "run_id",
            "lane",
            "n",
            "repeat_index",
            "log_path",
            "status",
            "exit_code",
            "reason",
        ]
        .map(String::from)
        .to_vec();
        let row = Row {
            run_id: "a_n1_r0".into(),
            lane: "a".into(),
            repeat_index: 0,
            log_path: "out/logs/x.log".into(),
            status: "ok".into(),
            exit_code: "0".into(),
            reason: String::new(),
            cols: vec![("n".into(), "1".into())],
        };
        write(&p, &cols, std::slice::from_ref(&row)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "run_id,lane,n,repeat_index,log_path,status,exit_code,reason\na_n1_r0,a,1,0,out/logs/x.log,ok,0,\n"
        );
        assert_eq!(read_checked(&p).unwrap().unwrap(), vec![row]);
        // a header without a core column is not a manifest; a short row is said with its line
        std::fs::write(&p, "run_id,lane\nx,y\n").unwrap();
        assert!(read_checked(&p)
            .unwrap_err()
            .contains("manifest.csv:1: not a manifest header (it lacks `repeat_index`"));
        // the header is the first line that is not blank
        std::fs::write(&p, "\n\r\nrun_id,lane\nx,y\n").unwrap();
        assert!(read_checked(&p)
            .unwrap_err()
            .contains("manifest.csv:3: not a manifest header"));
        std::fs::write(
            &p,
            "run_id,lane,repeat_index,log_path,status,exit_code,reason\nx,y,0,l,ok,0,\nz\n",
        )
        .unwrap();
        assert!(read_checked(&p).unwrap_err().contains("manifest.csv:3: "));
        assert_eq!(read(&p).len(), 1, "the rows that read are kept");
    }
}
