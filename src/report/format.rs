//! A report format: one file of this folder that writes one output from the report's data and
//! document; `report::formats()` lists them.

use std::cell::OnceCell;
use std::path::Path;

use crate::kind_api::data::ReportData;
use crate::kind_api::doc::Doc;

/// What every format is written from: the gathered data, the result directory, and the
/// document (the prose, tables and sections every kind hands over), built when first asked.
pub struct Report<'a> {
    pub data: &'a ReportData,
    pub dir: &'a Path,
    doc: OnceCell<Doc>,
}

impl<'a> Report<'a> {
    pub fn new(data: &'a ReportData, dir: &'a Path) -> Report<'a> {
        Report {
            data,
            dir,
            doc: OnceCell::new(),
        }
    }

    /// The report's document, the same for every format.
    pub fn doc(&self) -> &Doc {
        self.doc
            .get_or_init(|| crate::report::content::document(self.data, self.dir))
    }
}

/// One output of the report (summary.md, a CSV, summary.json, the plots, …).
pub trait Format {
    /// Write this format's files into the result directory (atomically: a failed write leaves
    /// the old file); the names written, relative to it.
    fn write(&self, r: &Report) -> Result<Vec<String>, String>;
}
