//! The report's content as data: headings, paragraphs, lists and tables of text spans. Kinds
//! hand their prose and sections over as blocks; each format (`markdown`, HTML, …) renders them
//! and escapes text its own way, so a new format needs no change in any kind.

/// A run of text: plain, code (a name, a command), strong, or a link to a file of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    Plain(String),
    Code(String),
    Strong(String),
    Link { text: String, href: String },
}

/// Text: spans in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Text(pub Vec<Span>);

impl Text {
    pub fn plain(s: impl Into<String>) -> Text {
        Text(vec![Span::Plain(s.into())])
    }

    pub fn code(s: impl Into<String>) -> Text {
        Text(vec![Span::Code(s.into())])
    }

    /// This text and then plain `s`.
    pub fn and(mut self, s: impl Into<String>) -> Text {
        self.0.push(Span::Plain(s.into()));
        self
    }

    /// This text and then `s` as code.
    pub fn and_code(mut self, s: impl Into<String>) -> Text {
        self.0.push(Span::Code(s.into()));
        self
    }

    pub fn and_link(mut self, text: impl Into<String>, href: impl Into<String>) -> Text {
        self.0.push(Span::Link {
            text: text.into(),
            href: href.into(),
        });
        self
    }

    /// The text without markup (a plot's title, a test's assertion).
    pub fn flat(&self) -> String {
        self.0
            .iter()
            .map(|s| match s {
                Span::Plain(t) | Span::Code(t) | Span::Strong(t) => t.as_str(),
                Span::Link { text, .. } => text.as_str(),
            })
            .collect()
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::plain(s)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::plain(s)
    }
}

/// One block of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading: 2 for a section, 3 for a part of one.
    Heading(u8, Text),
    Para(Text),
    /// A bulleted list, with the sentence that leads into it (kept with the list).
    List {
        lead: Option<Text>,
        items: Vec<Text>,
    },
    Table(Table),
}

/// A table: its header cells and rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub head: Vec<Text>,
    pub rows: Vec<Vec<Text>>,
}

impl Table {
    pub fn new<T: Into<Text>>(head: impl IntoIterator<Item = T>) -> Table {
        Table {
            head: head.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<T: Into<Text>>(&mut self, cells: impl IntoIterator<Item = T>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }
}

/// The blocks of a report, in order; kinds push theirs with these helpers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc(pub Vec<Block>);

impl Doc {
    pub fn h2(&mut self, t: impl Into<Text>) {
        self.0.push(Block::Heading(2, t.into()));
    }

    pub fn h3(&mut self, t: impl Into<Text>) {
        self.0.push(Block::Heading(3, t.into()));
    }

    pub fn para(&mut self, t: impl Into<Text>) {
        self.0.push(Block::Para(t.into()));
    }

    /// A line of strong text (a sweep point's label above its table).
    pub fn label(&mut self, s: impl Into<String>) {
        self.0.push(Block::Para(Text(vec![Span::Strong(s.into())])));
    }

    pub fn list(&mut self, lead: Option<Text>, items: Vec<Text>) {
        self.0.push(Block::List { lead, items });
    }

    /// A list under a lead line, left out where there are no items (the lead says what they are).
    pub fn list_of(&mut self, lead: impl Into<String>, items: Vec<Text>) {
        if !items.is_empty() {
            self.list(Some(Text::plain(lead)), items);
        }
    }

    pub fn table(&mut self, t: Table) {
        self.0.push(Block::Table(t));
    }

    pub fn extend(&mut self, other: Doc) {
        self.0.extend(other.0);
    }
}
