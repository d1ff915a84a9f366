//! The language of a report: Chinese (the RecStore runbook asks for it) or English. Every
//! sentence of a report is written in both and chosen here, so no report mixes the two.

use serde::{Deserialize, Serialize};

/// A report's language (`language "zh"|"en"` on the experiment, `--lang`).
/// English by default (a page without an experiment: compare, history).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Zh,
    #[default]
    En,
}

impl Lang {
    /// The values `language` and `--lang` take.
    pub const NAMES: &'static [&'static str] = &["zh", "en"];

    pub fn parse(s: &str) -> Option<Lang> {
        match s {
            "zh" => Some(Lang::Zh),
            "en" => Some(Lang::En),
            _ => None,
        }
    }

    /// `zh` or `en` (as written in the experiment, and in html's `lang`).
    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh",
            Lang::En => "en",
        }
    }

    /// The Chinese or the English one of two texts (or any two values).
    pub fn t<T>(self, zh: T, en: T) -> T {
        match self {
            Lang::Zh => zh,
            Lang::En => en,
        }
    }

    /// Between the items of a list: `、` or `, `.
    pub fn and_sep(self) -> &'static str {
        self.t("、", ", ")
    }

    /// Between the parts of a sentence: `，` or `, `.
    pub fn comma(self) -> &'static str {
        self.t("，", ", ")
    }

    /// Between clauses: `；` or `; `.
    pub fn semi(self) -> &'static str {
        self.t("；", "; ")
    }

    /// A parenthesis around `s`: full-width in Chinese, ` (…)` in English.
    pub fn paren(self, s: &str) -> String {
        self.t(format!("（{s}）"), format!(" ({s})"))
    }

    /// The end of a sentence: `。` or `. `.
    pub fn stop(self) -> &'static str {
        self.t("。", ". ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_pick() {
        for n in Lang::NAMES {
            assert_eq!(Lang::parse(n).unwrap().code(), *n);
        }
        assert_eq!(Lang::parse("fr"), None);
        assert_eq!(Lang::En.t("中", "en"), "en");
        assert_eq!(Lang::Zh.paren("x"), "（x）");
        assert_eq!(Lang::En.paren("x"), " (x)");
    }
}
