//! Parsing KDL text into a `KdlDocument`, turning the kdl crate's errors into located expr
//! diagnostics with a file name, and recognising the common slips.

use std::sync::Arc;

use kdl::{KdlDocument, KdlNode};
use miette::SourceSpan;

use crate::model::diag::{Code, Diag, Diags};
use crate::model::source::Source;

/// The parser recurses once per nesting level, and once per error it recovers from (a debug
/// build's frames are large): it runs on a thread with this much stack, whatever thread called
/// it — reserved, and touched only as deep as it goes. `load::MAX_DEPTH` bounds the depth and
/// `load::too_many_in_a_row` the runs of errors known to recurse.
const PARSER_STACK: usize = 512 << 20;

/// `KdlDocument::parse_v2` on a thread with `PARSER_STACK` of stack.
fn parse_v2(text: &str) -> Result<KdlDocument, kdl::KdlError> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(PARSER_STACK)
            .spawn_scoped(s, || KdlDocument::parse_v2(text))
            .map(|h| h.join())
    })
    .ok()
    .and_then(Result::ok)
    .unwrap_or_else(|| KdlDocument::parse_v2(text))
}

/// A `//` comment at least this long is parsed as a block comment of the same length.
const LONG_COMMENT: usize = 4096;

/// `text` with each long `//` comment made a `/* */` of the same bytes' length (blank inside):
/// the KDL parser reads a line comment some 2 µs a character (a 15 MB one took 37 s) and a block
/// comment at once. Every offset holds, and a comment holds nothing a diagnostic quotes.
fn long_comments_as_blocks(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() < LONG_COMMENT {
        return text.into();
    }
    let b = text.as_bytes();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    // a gap between two code bytes is a string or a comment: a comment where it starts with
    // `//` and no string opened it (a string's gap follows its `"`)
    let mut last: Option<(usize, u8)> = None;
    for (at, c) in code_bytes(text).chain(std::iter::once((text.len(), b'\n'))) {
        let from = last.map_or(0, |(l, _)| l + 1);
        if at >= from + LONG_COMMENT
            && last.is_none_or(|(_, c)| c != b'"')
            && b[from..].starts_with(b"//")
            && !ends_a_kdl_line(&text[from..at])
        {
            ranges.push((from, at));
        }
        last = Some((at, c));
    }
    if ranges.is_empty() {
        return text.into();
    }
    let mut out = b.to_vec();
    for (from, to) in ranges {
        out[from..to].fill(b' ');
        out[from..from + 2].copy_from_slice(b"/*");
        out[to - 2..to].copy_from_slice(b"*/");
    }
    String::from_utf8(out).map_or(text.into(), Into::into)
}

/// Whether `t` holds a line break of KDL's other than a last `\r` (a comment ends there, and
/// what follows is code).
fn ends_a_kdl_line(t: &str) -> bool {
    t.trim_end_matches('\r')
        .contains(['\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}'])
}

/// Files at least this large are parsed in pieces on several threads.
const PARALLEL_FROM: usize = 256 * 1024;

/// The bytes of KDL text that are code, with their offsets: comments are skipped (a line
/// comment's closing newline is kept), and a string, raw string or multi-line string stands as
/// one `"` at its start. Every scan of the file's structure (depth, node boundaries, v1 syntax)
/// walks this.
pub fn code_bytes(text: &str) -> impl Iterator<Item = (usize, u8)> + '_ {
    let b = text.as_bytes();
    let mut i = 0usize;
    std::iter::from_fn(move || {
        while i < b.len() {
            let at = i;
            match b[i] {
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    let mut nest = 0usize;
                    while i < b.len() {
                        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                            nest += 1;
                            i += 2;
                        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                            nest -= 1;
                            i += 2;
                            if nest == 0 {
                                break;
                            }
                        } else {
                            i += 1;
                        }
                    }
                }
                b'#' => {
                    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                    if b.get(i + hashes) != Some(&b'"') {
                        i += 1;
                        return Some((at, b'#'));
                    }
                    // raw string: #"…"#, ##"…"##, …
                    let close: Vec<u8> = std::iter::once(b'"')
                        .chain(std::iter::repeat_n(b'#', hashes))
                        .collect();
                    i += hashes + 1;
                    while i < b.len() && !b[i..].starts_with(&close) {
                        i += 1;
                    }
                    i = (i + close.len()).min(b.len());
                    return Some((at, b'"'));
                }
                // a multi-line string, to its closing `"""` (a `"` in it ends nothing)
                b'"' if b[i..].starts_with(b"\"\"\"") => {
                    i += 3;
                    while i < b.len() && !b[i..].starts_with(b"\"\"\"") {
                        if b[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i = (i + 3).min(b.len());
                    return Some((at, b'"'));
                }
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        if b[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i = (i + 1).min(b.len());
                    return Some((at, b'"'));
                }
                c => {
                    i += 1;
                    return Some((at, c));
                }
            }
        }
        None
    })
}

/// Offsets just after the newlines that end a top-level node: outside strings, comments and
/// braces, and not after a line continuation or a slashdash.
fn node_boundaries(text: &str) -> Vec<usize> {
    let (mut depth, mut out) = (0usize, Vec::new());
    let (mut line_tail, mut prev_tail) = (b'\n', b' ');
    for (i, c) in code_bytes(text) {
        match c {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b'\n' => {
                // `\` continues a node on the next line; `/-` comments out what follows
                if depth == 0 && line_tail != b'\\' && !(line_tail == b'-' && prev_tail == b'/') {
                    out.push(i + 1);
                }
                line_tail = b'\n';
                continue;
            }
            c if c.is_ascii_whitespace() => continue,
            _ => {}
        }
        prev_tail = line_tail;
        line_tail = c;
    }
    out
}

/// Shift every span of a node parsed from a piece of the file by the piece's offset.
fn shift(node: &mut KdlNode, by: usize) {
    let mv = |s: SourceSpan| SourceSpan::from((s.offset() + by, s.len()));
    node.set_span(mv(node.span()));
    let name = node.name_mut();
    name.set_span(mv(name.span()));
    if let Some(t) = node.ty_mut() {
        t.set_span(mv(t.span()));
    }
    for e in node.entries_mut() {
        e.set_span(mv(e.span()));
        if let Some(n) = e.name_mut() {
            n.set_span(mv(n.span()));
        }
        if let Some(t) = e.ty_mut() {
            t.set_span(mv(t.span()));
        }
    }
    if let Some(c) = node.children_mut() {
        c.set_span(mv(c.span()));
        for n in c.nodes_mut() {
            shift(n, by);
        }
    }
}

/// Parse a large file as pieces on several threads: cut where top-level nodes start into
/// pieces of about [`PIECE`] bytes, each worker parsing a run of them in order and giving up at
/// the first that does not parse. `None` when any piece does not parse: the caller reads the
/// errors ([`errors_in_pieces`]), so diagnostics are the same as without pieces. (A piece a
/// thread's share of the file parsed a file of 800,000 bad lines whole, recursing once per
/// error: the stack overflowed.)
fn parse_in_pieces(text: &str) -> Option<KdlDocument> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if threads < 2 {
        return None;
    }
    let cuts = piece_cuts(text);
    if cuts.len() < 3 {
        return None;
    }
    let pieces: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let per = pieces.len().div_ceil(threads);
    let runs: Vec<Option<Vec<KdlDocument>>> = std::thread::scope(|s| {
        let handles: Vec<_> = pieces
            .chunks(per)
            .map(|run| {
                std::thread::Builder::new()
                    .stack_size(PARSER_STACK)
                    .spawn_scoped(s, move || {
                        let mut docs = Vec::with_capacity(run.len());
                        for &(a, z) in run {
                            let mut doc = KdlDocument::parse_v2(&text[a..z]).ok()?;
                            for n in doc.nodes_mut() {
                                shift(n, a);
                            }
                            docs.push(doc);
                        }
                        Some(docs)
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.ok().and_then(|h| h.join().ok()).flatten())
            .collect()
    });
    let mut docs = runs.into_iter().flat_map(|r| match r {
        Some(d) => d.into_iter().map(Some).collect::<Vec<_>>(),
        None => vec![None],
    });
    let mut doc = docs.next()??;
    for p in docs {
        doc.nodes_mut().append(p?.nodes_mut());
    }
    Some(doc)
}

/// The size of a piece a large file is parsed in.
const PIECE: usize = 64 * 1024;

/// Where a large file is cut into pieces of about [`PIECE`] bytes: 0, the top-level node starts
/// that begin one, and the end.
fn piece_cuts(text: &str) -> Vec<usize> {
    let mut cuts = vec![0usize];
    for b in node_boundaries(text) {
        if b - cuts.last().copied().unwrap_or(0) >= PIECE {
            cuts.push(b);
        }
    }
    cuts.push(text.len());
    cuts.dedup();
    cuts
}

/// A line whose entries span at least this many bytes has them parsed in pieces on several
/// threads (a sweep of 400k values is one node: the pieces of the file above cannot split it).
const LONG_LINE: usize = 64 * 1024;

/// One long line's entries to parse apart: `[start, end)` of the file, and the offsets where a
/// piece starts (the first is `start`).
struct LongRun {
    start: usize,
    end: usize,
    cuts: Vec<usize>,
}

/// The long lines whose entries can be cut between two entries: a line with no braces,
/// semicolons, line continuations or slashdashes, cut before its third token or later, never
/// next to `=` or after a `)` (a property or a type annotation stays whole).
fn long_runs(text: &str, pieces: usize) -> Vec<LongRun> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    // the tokens of the current line: (start, end of the last byte seen), and whether it is usable
    let mut tokens: Vec<(usize, usize)> = Vec::new();
    let mut usable = true;
    let mut in_token = false;
    let mut finish = |tokens: &mut Vec<(usize, usize)>, usable: bool| {
        if usable && tokens.len() >= 4 {
            let can_cut = |k: usize| {
                let prev = b[tokens[k - 1].1 - 1];
                prev != b'=' && prev != b')' && b[tokens[k].0] != b'='
            };
            let start = (2..tokens.len()).find(|&k| can_cut(k));
            let end = tokens[tokens.len() - 1].1;
            if let Some(first) = start {
                let begin = tokens[first].0;
                if end - begin >= LONG_LINE {
                    let mut cuts = vec![begin];
                    let mut k = first;
                    for p in 1..pieces {
                        let want = begin + (end - begin) * p / pieces;
                        while k < tokens.len() && (tokens[k].0 < want || !can_cut(k)) {
                            k += 1;
                        }
                        if k < tokens.len() && tokens[k].0 > *cuts.last().unwrap_or(&0) {
                            cuts.push(tokens[k].0);
                        }
                    }
                    out.push(LongRun {
                        start: begin,
                        end,
                        cuts,
                    });
                }
            }
        }
        tokens.clear();
    };
    // a closing newline at the end, so a last token that is a string ends with the file
    for (i, c) in code_bytes(text).chain(std::iter::once((text.len(), b'\n'))) {
        // a string or comment skipped since the last code byte belongs to the current token
        if in_token {
            if let Some(t) = tokens.last_mut() {
                t.1 = i.max(t.1);
            }
        }
        match c {
            b'\n' => {
                finish(&mut tokens, usable);
                usable = true;
                in_token = false;
            }
            b'{' | b'}' | b';' | b'\\' | b'/' => {
                usable = false;
                in_token = true;
                tokens.push((i, i + 1));
            }
            c if c.is_ascii_whitespace() => in_token = false,
            _ => {
                if in_token {
                    if let Some(t) = tokens.last_mut() {
                        t.1 = i + 1;
                    }
                } else {
                    in_token = true;
                    tokens.push((i, i + 1));
                }
            }
        }
    }
    finish(&mut tokens, usable);
    out
}

/// Shift the spans of entries parsed from a piece of the file by the piece's offset.
fn shift_entries(entries: &mut [kdl::KdlEntry], by: isize) {
    let mv = |s: SourceSpan| SourceSpan::from(((s.offset() as isize + by) as usize, s.len()));
    for e in entries {
        e.set_span(mv(e.span()));
        if let Some(n) = e.name_mut() {
            n.set_span(mv(n.span()));
        }
        if let Some(t) = e.ty_mut() {
            t.set_span(mv(t.span()));
        }
    }
}

/// The innermost node whose span holds `at`.
fn node_at(nodes: &mut [KdlNode], at: usize) -> Option<&mut KdlNode> {
    let node = nodes.iter_mut().find(|n| {
        let s = n.span();
        s.offset() <= at && at < s.offset() + s.len()
    })?;
    let inner = node
        .children()
        .is_some_and(|c| c.nodes().iter().any(|n| n.span().offset() <= at));
    if inner {
        node_at(node.children_mut().as_mut()?.nodes_mut(), at)
    } else {
        Some(node)
    }
}

/// Parse a file with long lines of entries: each long line's entries are masked as a comment of
/// the same length (so every offset holds), the rest parsed as usual, and the masked entries
/// parsed in pieces on several threads as the arguments of a stand-in node, then put back in
/// their node. `None` when anything does not parse or does not fit: the caller parses the whole
/// file, so diagnostics are the same as without pieces.
fn parse_long_lines(text: &str, threads: usize) -> Option<KdlDocument> {
    let runs = long_runs(text, threads);
    if runs.is_empty() {
        return None;
    }
    let mut masked = text.as_bytes().to_vec();
    for r in &runs {
        masked[r.start..r.end].fill(b' ');
        masked[r.start..r.start + 2].copy_from_slice(b"/*");
        masked[r.end - 2..r.end].copy_from_slice(b"*/");
    }
    let masked = String::from_utf8(masked).ok()?;
    let mut doc = if masked.len() >= PARALLEL_FROM {
        parse_in_pieces(&masked)
    } else {
        None
    }
    .or_else(|| parse_v2(&masked).ok())?;
    // every piece of every run, parsed by `threads` workers
    let jobs: Vec<(usize, usize, usize)> = runs
        .iter()
        .enumerate()
        .flat_map(|(r, run)| {
            let ends = run.cuts.iter().skip(1).copied().chain([run.end]);
            run.cuts.iter().zip(ends).map(move |(&a, z)| (r, a, z))
        })
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let parsed: Vec<Vec<(usize, Option<Vec<kdl::KdlEntry>>)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(jobs.len()))
            .filter_map(|_| {
                std::thread::Builder::new()
                    .stack_size(PARSER_STACK)
                    .spawn_scoped(s, || {
                        let mut done = Vec::new();
                        loop {
                            let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(&(_, a, z)) = jobs.get(j) else { break };
                            let piece = format!("_ {}", &text[a..z]);
                            let entries = KdlDocument::parse_v2(&piece).ok().and_then(|mut d| {
                                let [node] = d.nodes_mut().as_mut_slice() else {
                                    return None;
                                };
                                if node.children().is_some() {
                                    return None;
                                }
                                let mut entries = std::mem::take(node.entries_mut());
                                shift_entries(&mut entries, a as isize - 2);
                                Some(entries)
                            });
                            done.push((j, entries));
                        }
                        done
                    })
                    .ok()
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect()
    });
    let mut pieces: Vec<Option<Vec<kdl::KdlEntry>>> = vec![None; jobs.len()];
    for (j, entries) in parsed.into_iter().flatten() {
        pieces[j] = entries;
    }
    let mut pieces = pieces.into_iter();
    for run in &runs {
        let node = node_at(doc.nodes_mut(), run.start)?;
        let at = node
            .entries()
            .iter()
            .take_while(|e| e.span().offset() < run.start)
            .count();
        let tail = node.entries_mut().split_off(at);
        let mut run_pieces = Vec::with_capacity(run.cuts.len());
        for _ in 0..run.cuts.len() {
            run_pieces.push(pieces.next()??);
        }
        let entries = node.entries_mut();
        entries.reserve(run_pieces.iter().map(Vec::len).sum::<usize>() + tail.len());
        for mut p in run_pieces {
            entries.append(&mut p);
        }
        entries.extend(tail);
    }
    Some(doc)
}

/// Parse `src` as KDL 2.0. On failure every problem found is pushed to `diags`.
pub fn parse(src: &Arc<Source>, diags: &mut Diags) -> Option<KdlDocument> {
    let doc = parse_any(src, diags)?;
    annotations(src, &doc, diags);
    let quoted = single_quoted(src, &doc);
    if quoted.is_empty() {
        return Some(doc);
    }
    for diag in quoted {
        diags.push(diag);
    }
    None
}

/// Type annotations (`(u8)300`, `n=(f32)1`, `(t)node`): KDL 2.0 allows them, expr reads none —
/// `(u8)300` is the integer 300 — so each is a warning (at most 20), not silently dropped.
fn annotations(src: &Arc<Source>, doc: &KdlDocument, diags: &mut Diags) {
    let mut found: Vec<(SourceSpan, String)> = Vec::new();
    let mut stack: Vec<&KdlNode> = doc.nodes().iter().collect();
    while let Some(node) = stack.pop() {
        if let Some(t) = node.ty() {
            found.push((node.span(), t.value().to_string()));
        }
        for e in node.entries() {
            if let Some(t) = e.ty() {
                found.push((e.span(), t.value().to_string()));
            }
        }
        if let Some(children) = node.children() {
            stack.extend(children.nodes());
        }
    }
    found.sort_by_key(|(s, _)| s.offset());
    for (span, t) in found.into_iter().take(20) {
        diags.push(
            Diag::warning(
                Code::InvalidValue,
                format!("expr does not read type annotations: `({t})` changes nothing here"),
            )
            .at(src, span)
            .label("annotation ignored")
            .help(format!("remove `({t})`: the value is read as written")),
        );
    }
}

/// The values written in single quotes: KDL 2.0 reads `'fast'` as a bare word with its quotes
/// in it, and `'two words'` as two words, so the file parses and says something else; and a
/// bare keyword the parser takes as a word (`-inf`, which KDL 2.0 keeps for `#-inf`).
fn single_quoted(src: &Arc<Source>, doc: &KdlDocument) -> Vec<Diag> {
    fn walk(src: &Arc<Source>, nodes: &[KdlNode], out: &mut Vec<Diag>) {
        for node in nodes {
            let repr = |e: &kdl::KdlEntry| {
                let text = e.format().map(|f| f.value_repr.trim().to_string());
                text.filter(|_| matches!(e.value(), kdl::KdlValue::String(_)))
            };
            let entries = node.entries();
            let mut i = 0;
            while i < entries.len() {
                // a bare keyword the parser took as a word (`x=-inf`; the others it refuses)
                let word = repr(&entries[i]).filter(|r| BARE_KEYWORDS.contains(&r.as_str()));
                if let Some(d) = word.as_deref().and_then(habit) {
                    out.push(d.at(src, entries[i].span()));
                    i += 1;
                    continue;
                }
                let opened = repr(&entries[i]).filter(|r| r.starts_with('\''));
                let Some(first) = opened else {
                    i += 1;
                    continue;
                };
                // `'two words'`: the words up to the one that closes the quote
                let mut last = i;
                if first.len() == 1 || !first.ends_with('\'') {
                    if let Some(k) = (i + 1..entries.len()).find(|&k| {
                        entries[k].name().is_none()
                            && repr(&entries[k]).is_some_and(|r| r.ends_with('\''))
                    }) {
                        last = k;
                    }
                }
                let start = entries[i].span().offset();
                let end = entries[last].span().offset() + entries[last].span().len();
                let help = if last > i {
                    "write it in double quotes, `\"…\"` (KDL 2.0 reads each word between the single quotes as a value of its own), or raw, `#\"…\"#`, where the text holds double quotes or backslashes"
                } else {
                    "write it in double quotes, `\"…\"`, or raw, `#\"…\"#`, where the text holds double quotes or backslashes"
                };
                out.push(
                    Diag::error(Code::KdlSyntax, "KDL has no single-quoted strings")
                        .at(src, (start, end - start).into())
                        .label("not KDL 2.0")
                        .help(help),
                );
                i = last + 1;
            }
            if let Some(children) = node.children() {
                walk(src, children.nodes(), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(src, doc.nodes(), &mut out);
    out
}

/// The errors of a large file that does not parse, read a piece of about 64 KiB at a time (cut
/// where top-level nodes start) until [`crate::model::diag::MAX_DIAGS`] are found: the whole
/// file's parse recovers from each error by recursing, and 800,000 bad lines (4.8 MB) took
/// gigabytes and the stack. None when every piece parses (the whole is then parsed as one).
fn errors_in_pieces(text: &str) -> Option<kdl::KdlError> {
    let cuts = piece_cuts(text);
    let mut diagnostics = Vec::new();
    let mut input = None;
    for w in cuts.windows(2) {
        let (a, z) = (w[0], w[1]);
        if let Err(e) = parse_v2(&text[a..z]) {
            input.get_or_insert(e.input);
            diagnostics.extend(e.diagnostics.into_iter().map(|mut d| {
                d.span = (d.span.offset() + a, d.span.len()).into();
                d
            }));
        }
        if diagnostics.len() >= crate::model::diag::MAX_DIAGS {
            break;
        }
    }
    Some(kdl::KdlError {
        input: input?,
        diagnostics,
    })
}

/// Parse `src` as KDL 2.0, by whichever route its size asks for.
fn parse_any(src: &Arc<Source>, diags: &mut Diags) -> Option<KdlDocument> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    // every route parses the text with its long `//` comments as block comments
    let text = &*long_comments_as_blocks(&src.text);
    if threads >= 2 && text.len() >= LONG_LINE {
        if let Some(doc) = parse_long_lines(text, threads) {
            return Some(doc);
        }
    }
    if text.len() >= PARALLEL_FROM {
        if let Some(doc) = parse_in_pieces(text) {
            return Some(doc);
        }
    }
    // a large file that does not parse: its errors a piece at a time, up to the most kept
    let parsed = match (text.len() >= PARALLEL_FROM)
        .then(|| errors_in_pieces(text))
        .flatten()
    {
        Some(e) => Err(e),
        None => parse_v2(text),
    };
    match parsed {
        Ok(doc) => Some(doc),
        Err(err) => {
            said_errors(src, err, diags);
            None
        }
    }
}

/// What a file that does not parse is told: its KDL errors, each with the habit it looks like
/// (an unquoted address, KDL v1, single quotes, a bad escape, a broken string).
/// An error token that is a habit of another language (`'…'`, KDL v1's raw string `r#"…"#`)
/// or a bare keyword (`lane nan`), said as such; None for any other.
fn habit(word: &str) -> Option<Diag> {
    if word.starts_with('\'') {
        return Some(Diag::error(Code::KdlSyntax, "KDL has no single-quoted strings")
            .label("not KDL 2.0")
            .help("write it in double quotes, `\"…\"`, or raw, `#\"…\"#`, where the text holds double quotes or backslashes"));
    }
    if word.starts_with("r#") || word.starts_with("r\"") {
        return Some(
            Diag::error(Code::KdlSyntax, "`r#\"…\"#` is KDL v1's raw string")
                .label("not KDL 2.0")
                .help("KDL 2.0 writes a raw string without the `r`: `#\"…\"#`"),
        );
    }
    if !BARE_KEYWORDS.contains(&word) {
        return None;
    }
    let what = match word {
        "true" | "false" => "a boolean",
        "null" => "null",
        _ => "a number",
    };
    let kdl = format!("#{word}");
    Some(
        Diag::error(
            Code::KdlSyntax,
            format!("bare `{word}` is a KDL 2.0 keyword, not a word"),
        )
        .label(format!("quote it, or write {kdl}"))
        .help(format!(
            "write `\"{word}\"` for the text, or `{kdl}` for {what} (KDL 2.0 writes `#true`, `#false`, `#null`, `#nan`, `#inf`, `#-inf`)"
        )),
    )
}

/// Words KDL 2.0 keeps for its keywords, which a bare word may not be.
const BARE_KEYWORDS: &[&str] = &["true", "false", "null", "nan", "inf", "-inf"];

fn said_errors(src: &Arc<Source>, err: kdl::KdlError, diags: &mut Diags) {
    let paths = unquoted_paths(&src.text);
    let mut addresses = unquoted_addresses(&src.text);
    let dotted = addresses.len();
    let paths: Vec<(usize, usize)> = paths
        .into_iter()
        .filter(|p| !addresses.contains(p))
        .collect();
    addresses.extend(paths);
    let address_lines: Vec<usize> = addresses.iter().map(|(o, _)| src.line_col(*o).0).collect();
    // the message and its help quote the token as the excerpt shows it: a secret's
    // value masked
    let masked = if addresses.is_empty() {
        String::new()
    } else {
        crate::util::secret::mask_in_text(&src.text)
    };
    for (i, (offset, len)) in addresses.iter().enumerate() {
        let token = masked.get(*offset..*offset + *len).unwrap_or("…");
        let (key, sep) = property_key_before(&src.text, *offset);
        let fixed = match key {
            Some(k) => format!("{k}{sep}\"{token}\""),
            None => format!("\"{token}\""),
        };
        let why = if i < dotted {
            format!("KDL 2.0 reads a bare `{token}` as a malformed number")
        } else {
            "KDL 2.0 has no bare word with a `/`".to_string()
        };
        diags.push(
            Diag::error(
                Code::UnquotedAddress,
                format!("`{token}` must be quoted: {why}"),
            )
            .at(src, (*offset, *len).into())
            .label("quote this value")
            .help(format!("write `{fixed}`")),
        );
    }
    if addresses.is_empty() && is_kdl_v1(&src.text) {
        let span = err
            .diagnostics
            .first()
            .map(|d| d.span)
            .unwrap_or_else(|| (0, 0).into());
        // a bare `true` where text was meant (`lane true`) reads as KDL v1's boolean too
        let word = src.slice(span.offset(), span.len()).trim();
        let text = if BARE_KEYWORDS.contains(&word) {
            format!("; `{word}` meant as text is written `\"{word}\"`")
        } else {
            String::new()
        };
        diags.push(
            Diag::error(Code::KdlV1, "this file looks like KDL v1; expr reads KDL 2.0")
                .at(src, clamp(src, span))
                .label("not valid KDL 2.0")
                .help(format!("in KDL 2.0 booleans are `#true`/`#false`, null is `#null` and raw strings are `#\"…\"#`; convert with the kdl crate's `v1_to_v2` or by hand{text}")),
        );
        return;
    }
    if said_spaced_equals(src, diags) {
        return;
    }
    let (kept, hidden) = past_a_broken_string(&src.text, err.diagnostics);
    // an unclosed block is said twice by the parser (at its `{`, and again after its nodes):
    // once is enough
    let unclosed = kept.iter().any(|d| says(d, &["no closing '}'"]));
    let mut said_value = false;
    for d in kept {
        if unclosed && says(&d, &["closing '}' was not found"]) {
            continue;
        }
        // the parser names no place for a property without a value (`cwd={{ outdir }}`,
        // `timeout=`): it underlined the file's first lines
        if says(&d, &["expected property value"]) && said_bad_value(src, &mut said_value, diags) {
            continue;
        }
        let (start, end) = (d.span.offset(), d.span.offset() + d.span.len());
        let line = src.line_col(start).0;
        let covers_address = addresses.iter().any(|(o, _)| *o >= start && *o <= end);
        if covers_address || address_lines.contains(&line) {
            continue;
        }
        let word = src.slice(start, d.span.len()).trim();
        if let Some(habit) = habit(word) {
            diags.push(habit.at(src, clamp(src, d.span)));
            continue;
        }
        // `"x=(\d+)"`: an escape KDL does not know; the parser's own words ("unexpected
        // newline", at the line's end) send the reader elsewhere
        if let Some((at, esc)) = bad_escape(&src.text, start) {
            diags.push(
                Diag::error(
                    Code::KdlSyntax,
                    format!("`\\{esc}` is not an escape KDL knows"),
                )
                .at(src, (at, 1 + esc.len_utf8()).into())
                .label("in a quoted string a backslash starts an escape")
                .help(format!("write the string raw, where a backslash is text: `#\"…\\{esc}…\"#` (e.g. `pattern=#\"x=(\\d+)\"#`), or the backslash twice: `\\\\{esc}`; KDL's escapes are \\n \\r \\t \\\\ \\\" \\b \\f \\s \\u{{…}}")),
            );
            continue;
        }
        let mut diag = Diag::error(
            Code::KdlSyntax,
            d.message
                .clone()
                .unwrap_or_else(|| "invalid KDL".into())
                .to_lowercase()
                .trim_end_matches('.')
                .to_string(),
        )
        .at(src, clamp(src, d.span));
        diag = diag.label(d.label.clone().unwrap_or_else(|| "here".into()));
        let mut help = d.help.clone().unwrap_or_else(|| {
            "see https://kdl.dev for KDL 2.0 syntax; strings with `.`, `/` or `:` need quotes"
                .into()
        });
        if unclosed && says(&d, &["no closing '}'"]) {
            help =
                "close the block with `}` after its last node (each `{` needs its own `}`)".into();
        }
        if is_string_error(&d) {
            if src.text[..start.min(src.text.len())].ends_with('#')
                || src.text[start.min(src.text.len())..].starts_with('#')
            {
                help = "a raw string over several lines is written `#\"\"\"`, a line break, its lines, and `\"\"\"#` on a line of its own".into();
            }
            if says(&d, &[STRING_ERRORS[1]]) {
                help = "begin the string's first line on the line after its opening `\"\"\"`; the closing `\"\"\"` stands on a line of its own".into();
            }
            if hidden > 0 {
                let s = if hidden == 1 { "" } else { "s" };
                help = format!("{}; {hidden} more error{s} the parser reported past this string are left out (the string hides where the nodes after it end): fix it and check again", help.trim_end_matches('.'));
            }
        }
        diag = diag.help(help);
        diags.push(diag);
    }
    if !diags.has_errors() {
        diags.push(
            Diag::error(Code::KdlSyntax, "invalid KDL")
                .at(src, (0, 0).into())
                .help("see https://kdl.dev for KDL 2.0 syntax"),
        );
    }
}

/// TOML's habit, `repeat = 3`: one error a line that says so, not the parser's cascade.
/// Whether any was said.
fn said_spaced_equals(src: &Arc<Source>, diags: &mut Diags) -> bool {
    // a shell's or TOML's comment, `# …`, at a line's start (not in a string: a script's)
    let code = code_offsets(&src.text, b'#');
    let mut offset = 0;
    let mut hashes = 0;
    for line in src.text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let rest = &line[indent..];
        if (rest.starts_with("# ") || rest.starts_with("#\t") || rest == "#\n")
            && code.contains(&(offset + indent))
        {
            hashes += 1;
            if hashes <= 20 {
                diags.push(
                    Diag::error(Code::KdlSyntax, "`#` does not start a comment in KDL")
                        .at(src, (offset + indent, 1).into())
                        .label("not a comment")
                        .help("KDL comments are `// …` to the line's end, or `/* … */`; `/-` comments out a node"),
                );
            }
        }
        offset += line.len();
    }
    if hashes > 0 {
        return true;
    }
    let habits = spaced_equals(&src.text);
    for (at, node, value) in habits.iter().take(20) {
        diags.push(
            Diag::error(Code::KdlSyntax, format!("`{node} = …` is not KDL"))
                .at(src, (*at, 1).into())
                .label("no `=` after a node's name")
                .help(format!("KDL writes a node's value after a space: `{node} {value}` (a property is `name=value`, after a node's name, without spaces)")),
        );
    }
    !habits.is_empty()
}

/// A property without a value the parser reads: said once, at its `=` ([`bad_property_value`]).
/// Whether it was found (said now or before).
fn said_bad_value(src: &Arc<Source>, said: &mut bool, diags: &mut Diags) -> bool {
    let Some((at, len)) = bad_property_value(&src.text) else {
        return false;
    };
    if !*said {
        diags.push(
            Diag::error(Code::KdlSyntax, "this property has no value KDL can read")
                .at(src, (at, len).into())
                .label("not a value")
                .help("write the value right after `=`: a number, `#true`/`#false`, or a quoted string — a template is a string: `cwd=\"{{ outdir }}\"`"),
        );
        *said = true;
    }
    true
}

/// Where `byte` stands in the file's code (not in a string or a comment).
fn code_offsets(text: &str, byte: u8) -> std::collections::HashSet<usize> {
    code_bytes(text)
        .filter(|(_, c)| *c == byte)
        .map(|(i, _)| i)
        .collect()
}

/// The lines that open with a name, a spaced `=` and a value (`repeat = 3`, TOML's way), as
/// (offset of the `=`, the name, the value), outside strings and comments.
fn spaced_equals(text: &str) -> Vec<(usize, String, String)> {
    let code = code_offsets(text, b'=');
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start().len();
        let rest = &body[indent..];
        let name_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        let after = &rest[name_len..];
        if name_len > 0 && after.starts_with([' ', '\t']) {
            let eq = after.len() - after.trim_start().len();
            if after[eq..].starts_with('=') && after[eq + 1..].starts_with([' ', '\t']) {
                let at = offset + indent + name_len + eq;
                if code.contains(&at) {
                    out.push((
                        at,
                        rest[..name_len].to_string(),
                        after[eq + 1..].trim().to_string(),
                    ));
                }
            }
        }
        offset += line.len();
    }
    out
}

/// The first property whose value KDL cannot read, as (offset, length): an `=` followed by
/// nothing on its line, a `{`, `;` or `}` (the value as `(offset of the =, 1)`), or a word that
/// starts as a number and goes on in letters (`timeout=120lanes="x"`).
fn bad_property_value(text: &str) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    for (i, c) in code_bytes(text) {
        if c != b'=' {
            continue;
        }
        let mut k = i + 1;
        while k < b.len() && (b[k] == b' ' || b[k] == b'\t') {
            k += 1;
        }
        match b.get(k) {
            None | Some(b'\n' | b'\r' | b'{' | b';' | b'}') => return Some((i, 1)),
            Some(c)
                if c.is_ascii_digit()
                    || ((*c == b'-' || *c == b'+')
                        && b.get(k + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                let end = (k..b.len())
                    .find(|&j| {
                        matches!(
                            b[j],
                            b' ' | b'\t' | b'\n' | b'\r' | b';' | b'{' | b'}' | b'"' | b'='
                        )
                    })
                    .unwrap_or(b.len());
                let word = &text[k..end];
                let radix = word.trim_start_matches(['-', '+']);
                let hex = radix.starts_with("0x");
                let (bin, oct) = (radix.starts_with("0b"), radix.starts_with("0o"));
                let numeric = |c: char| {
                    c.is_ascii_digit()
                        || matches!(c, '.' | '_' | '-' | '+' | 'e' | 'E')
                        || (hex && (c.is_ascii_hexdigit() || c == 'x'))
                        || (bin && c == 'b')
                        || (oct && c == 'o')
                };
                if !word.chars().all(numeric) {
                    return Some((k, end - k));
                }
            }
            _ => {}
        }
    }
    None
}

/// The first escape KDL does not know in a quoted string on the line of `offset` (its
/// backslash's offset, and the character after it): `"x=(\d+)"`.
fn bad_escape(text: &str, offset: usize) -> Option<(usize, char)> {
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return None;
    }
    let from = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let to = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = &text[from..to];
    // asked once per error of the parser's: a very long line is not read again each time
    if line.len() > 1 << 16 {
        return None;
    }
    // nor a line read for the error before (thousands of errors on one 32 KB line of `{}` read
    // it as many times: 20 s)
    // (the text by its place and length, the line by its bounds and its ends: another text
    // at the same address would have to match all of them)
    type Key = (usize, usize, usize, usize, [u8; 8], [u8; 8]);
    type Seen = Option<(Key, Option<(usize, char)>)>;
    thread_local! {
        static LAST: std::cell::Cell<Seen> = const { std::cell::Cell::new(None) };
    }
    let ends = |b: &[u8]| {
        let mut e = [0u8; 8];
        for (d, s) in e.iter_mut().zip(b) {
            *d = *s;
        }
        e
    };
    let lb = line.as_bytes();
    let key = (
        text.as_ptr() as usize,
        text.len(),
        from,
        to,
        ends(lb),
        ends(&lb[lb.len().saturating_sub(8)..]),
    );
    if let Some((k, found)) = LAST.get() {
        if k == key {
            return found;
        }
    }
    let found = first_bad_escape(line).map(|(i, e)| (from + i, e));
    LAST.set(Some((key, found)));
    found
}

/// [`bad_escape`] in one line: the offset in it of the backslash, and the character after it.
fn first_bad_escape(line: &str) -> Option<(usize, char)> {
    let mut chars = line.char_indices().peekable();
    let mut quoted = false;
    while let Some((i, c)) = chars.next() {
        match c {
            // a raw string: its backslashes are text
            '#' if !quoted && line[i..].trim_start_matches('#').starts_with('"') => {
                let hashes = line[i..].len() - line[i..].trim_start_matches('#').len();
                let close = format!("\"{}", "#".repeat(hashes));
                let body = i + hashes + 1;
                match line[body..].find(&close) {
                    Some(k) => {
                        while chars
                            .peek()
                            .is_some_and(|(j, _)| *j < body + k + close.len())
                        {
                            chars.next();
                        }
                    }
                    None => return None,
                }
            }
            '/' if !quoted && line[i..].starts_with("//") => return None,
            '"' => quoted = !quoted,
            '\\' if quoted => match chars.next() {
                Some((_, 'n' | 'r' | 't' | '\\' | '"' | 'b' | 'f' | 's' | 'u')) => {}
                Some((_, w)) if w.is_whitespace() => {}
                Some((_, e)) => return Some((i, e)),
                None => return None,
            },
            _ => {}
        }
    }
    None
}

/// What the kdl crate says of a string it cannot read to its end.
const STRING_ERRORS: &[&str] = &[
    "unexpected newline in single-line quoted string",
    "multi-line string opening quotes must be immediately followed by a newline",
    "multiline strings must be closed by",
    "multi-line string bodies must be prefixed",
    "single-line raw strings cannot look like multi-line ones",
];

/// What the kdl crate says of the nodes it cannot close once a string went wrong: after a
/// broken string these follow from it (a `}` read as text, text read as nodes).
const CASCADE_ERRORS: &[&str] = &[
    "no closing '}' for child block",
    "closing '}' was not found after nodes",
    "expected end of document",
    "found child block instead of node name",
    "found invalid node name",
    "expected quoted string",
];

fn says(d: &kdl::KdlDiagnostic, what: &[&str]) -> bool {
    let m = d.message.as_deref().unwrap_or("").to_lowercase();
    what.iter().any(|w| m.starts_with(w))
}

fn is_string_error(d: &kdl::KdlDiagnostic) -> bool {
    says(d, STRING_ERRORS)
}

/// The parser's errors to show, and how many are left out: past a string it cannot read to its
/// end, the errors about nodes that do not close are its echoes (one unclosed raw string over
/// several lines made eleven, the string's own fourth): the first broken string is shown, its
/// echoes are not, and any other error stays.
fn past_a_broken_string(
    text: &str,
    all: Vec<kdl::KdlDiagnostic>,
) -> (Vec<kdl::KdlDiagnostic>, usize) {
    // a string that does not end, or one with an escape KDL does not know (the parser says
    // "expected quoted string" of `"\S"`, "unexpected newline" of `"\d"`)
    let broken =
        |d: &kdl::KdlDiagnostic| is_string_error(d) || bad_escape(text, d.span.offset()).is_some();
    let Some(first) = all
        .iter()
        .filter(|d| broken(d))
        .map(|d| d.span.offset())
        .min()
    else {
        return (all, 0);
    };
    let total = all.len();
    let kept: Vec<_> = all
        .into_iter()
        .filter(|d| {
            if broken(d) {
                d.span.offset() == first
            } else {
                !says(d, CASCADE_ERRORS)
            }
        })
        .collect();
    let hidden = total - kept.len();
    (kept, hidden)
}

fn clamp(src: &Source, span: SourceSpan) -> SourceSpan {
    let len = src.text.len();
    let off = span.offset().min(len);
    (off, span.len().min(len - off)).into()
}

/// Whether a file that is not KDL 2.0 reads as KDL 1: it uses v1's bare `true`/`false`/`null`
/// or `r"…"` raw strings, and none of 2.0's `#true`/`#false`/`#null`/`#"…"#`.
fn is_kdl_v1(text: &str) -> bool {
    let (mut v1, mut v2) = (false, false);
    let b = text.as_bytes();
    let mut skip_to = 0usize;
    for (i, c) in code_bytes(text) {
        if i < skip_to {
            continue;
        }
        let before = if i == 0 { b'\n' } else { b[i - 1] };
        match c {
            // a 2.0 keyword or a raw string (the string itself comes as `"`)
            b'#' if matches!(b.get(i + 1), Some(b't' | b'f' | b'n' | b'i')) => v2 = true,
            b'"' if b[i] == b'#' => v2 = true,
            b'r' if !before.is_ascii_alphanumeric()
                && before != b'-'
                && b.get(i + 1) == Some(&b'"') =>
            {
                v1 = true
            }
            c if c.is_ascii_alphabetic() && matches!(before, b' ' | b'\t' | b'=') => {
                let end = b[i..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_'))
                    .map_or(b.len(), |p| i + p);
                // a bare keyword used as a value: not first on its line
                let first_on_line = text[..i]
                    .rsplit('\n')
                    .next()
                    .is_none_or(|l| l.trim().is_empty());
                if matches!(&text[i..end], "true" | "false" | "null") && !first_on_line {
                    v1 = true;
                }
                skip_to = end;
            }
            _ => {}
        }
    }
    v1 && !v2
}

/// Bare tokens that look like dotted addresses (`10.0.2.190`, `1.2.3`), outside strings and comments.
fn unquoted_addresses(text: &str) -> Vec<(usize, usize)> {
    // read as code: strings of every kind (raw `#"…"#`, multi-line) and comments left out (a
    // raw string's `\"` ends nothing: read as a plain string's, what followed was in quotes)
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    // (start, end, dots) of the number-like token being read
    let mut tok: Option<(usize, usize, usize)> = None;
    let mut last = None;
    for (at, c) in code_bytes(text) {
        let next = last.is_some_and(|l: usize| l + 1 == at);
        last = Some(at);
        if let Some((start, end, dots)) = tok {
            if next && (c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':')) {
                tok = Some((start, at + 1, dots + usize::from(c == b'.')));
                continue;
            }
            if dots >= 2 {
                out.push((start, end - start));
            }
            tok = None;
        }
        let starts_token = at == 0 || matches!(bytes[at - 1], b' ' | b'\t' | b'=' | b'\n' | b'(');
        if starts_token && c.is_ascii_digit() {
            tok = Some((at, at + 1, 0));
        }
    }
    if let Some((start, end, dots)) = tok {
        if dots >= 2 {
            out.push((start, end - start));
        }
    }
    out
}

/// Bare words with a `/` (`results/x`, `/data/repo`), outside strings and comments: a path
/// KDL 2.0 reads as no word at all (helper 78: `output results/x` got the parser's "expected
/// identifier string … did you want a space here?").
fn unquoted_paths(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut tok: Option<(usize, usize)> = None;
    let mut last = None;
    let stop = |c: u8| c.is_ascii_whitespace() || b"{};=()\"[]".contains(&c);
    let flush = |tok: Option<(usize, usize)>, out: &mut Vec<(usize, usize)>| {
        if let Some((a, z)) = tok {
            let w = &bytes[a..z];
            // (a word in single quotes, `'a/b'`, is another habit, said as that one)
            let plain = w[0].is_ascii_alphanumeric() || b"./~_-".contains(&w[0]);
            if plain && w.contains(&b'/') && !w.starts_with(b"/-") {
                out.push((a, z - a));
            }
        }
    };
    for (at, c) in code_bytes(text) {
        let next = last.is_some_and(|l: usize| l + 1 == at);
        last = Some(at);
        match tok {
            Some((a, _)) if next && !stop(c) => tok = Some((a, at + 1)),
            _ => {
                flush(tok.take(), &mut out);
                let starts = at == 0 || matches!(bytes[at - 1], b' ' | b'\t' | b'=' | b'\n');
                if starts && !stop(c) {
                    tok = Some((at, at + 1));
                }
            }
        }
    }
    flush(tok, &mut out);
    out
}

/// For a value at `offset`, the property key written just before it (`ip=`), if any.
fn property_key_before(text: &str, offset: usize) -> (Option<&str>, &'static str) {
    let before = &text[..offset];
    if let Some(stripped) = before.strip_suffix('=') {
        // after the separator, whatever its width (U+00A0, U+3000: more than a byte)
        let start = stripped
            .char_indices()
            .rfind(|(_, c)| c.is_whitespace() || *c == '{' || *c == ';')
            .map(|(i, c)| i + c.len_utf8())
            .unwrap_or(0);
        return (Some(&stripped[start..]), "=");
    }
    (None, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line is read once for the errors on it (a cache of the last line read), and each
    /// line's own answer comes back: the same line again, another line, another text.
    #[test]
    fn a_bad_escape_is_found_per_line_and_read_once_for_its_errors() {
        let text = "run \"x=(\\d+)\"\nrun \"ok\\n\"\nrun \"y\\q\"\n";
        assert_eq!(bad_escape(text, 2), Some((8, 'd')));
        assert_eq!(bad_escape(text, 5), Some((8, 'd')));
        assert_eq!(bad_escape(text, 17), None);
        assert_eq!(bad_escape(text, 30), Some((31, 'q')));
        let other = String::from("run \"\\w\"\n");
        assert_eq!(bad_escape(&other, 2), Some((5, 'w')));
    }

    /// A key after a space of more than one byte (U+00A0, U+3000, U+2028) is cut after the
    /// space: cut one byte after its start, inside it, expr panicked (helper 62).
    #[test]
    fn a_property_key_after_a_wide_space_is_cut_at_a_char_boundary() {
        for sp in ["\u{a0}", "\u{85}", "\u{2028}", "\u{3000}"] {
            let text = format!("x a{sp}b=1.2.3.4");
            let at = text.find("1.2").unwrap();
            assert_eq!(property_key_before(&text, at), (Some("b"), "="), "{sp:?}");
        }
    }

    /// A long `//` comment is parsed as a block comment (2 µs a character otherwise), a string
    /// that looks like one is not, and a comment that KDL ends early (U+2028) is left as it is.
    #[test]
    fn long_line_comments_are_read_as_blocks_of_the_same_length() {
        let long = "x".repeat(LONG_COMMENT);
        let text = format!("a 1 // {long}\nb \"//{long}\"\n// {long}\u{2028}c 2\n// {long}");
        let masked = long_comments_as_blocks(&text);
        assert_eq!(masked.len(), text.len());
        let blank = format!("/*{}*/", " ".repeat(long.len() - 1));
        assert!(
            masked.starts_with(&format!("a 1 {blank}\nb \"//x")),
            "{}",
            &masked[..40]
        );
        assert!(masked.contains("\u{2028}c 2\n"));
        assert!(masked.ends_with(&blank));
        let doc = parse_v2(&masked).unwrap();
        let names: Vec<_> = doc
            .nodes()
            .iter()
            .map(|n| n.name().value().to_string())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        // a short comment is not touched
        assert!(matches!(
            long_comments_as_blocks(&format!("{long}\n// c\n")),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn code_bytes_skip_comments_and_fold_strings() {
        let text = "a \"x{y\" // c {\n/* b { /* n */ */ #\"r{\"# {}\n";
        let code: String = code_bytes(text).map(|(_, c)| c as char).collect();
        assert_eq!(code, "a \" \n \" {}\n");
        // a multi-line string to its closing `"""`, an odd `"` in it and all (helper 51: the
        // `#` line of a script read as code, and was said as a comment KDL has not)
        let text = "run \"\"\"\n    sed 's/\"//g' f\n    # strip\n    \"\"\"\nx\n";
        let code: String = code_bytes(text).map(|(_, c)| c as char).collect();
        assert_eq!(code, "run \"\nx\n");
        assert_eq!(
            node_boundaries("a {\n b\n}\nc \\\n d\ne\n"),
            vec![9, 16, 18]
        );
        assert!(
            is_kdl_v1("x true\n") && !is_kdl_v1("x true #false\n") && !is_kdl_v1("x \"true\"\n")
        );
    }

    #[test]
    fn finds_unquoted_addresses_outside_strings_and_comments() {
        let t = "host a ip=10.0.2.190 // 1.2.3.4\nhost b ip=\"10.0.0.1\" x 1.5\n";
        let found = unquoted_addresses(t);
        assert_eq!(found, vec![(10, 10)]);
        // a raw string ending in `\"` is closed by its `"#`: the quoted address after it is not
        // taken for a bare one (helper 62); one at the end of the text is found
        let t = "run #\"echo \\\"#\nrun \"echo 1.2.3.4\"\nx /* 9.9.9.9 */ 10.1.1.1";
        assert_eq!(unquoted_addresses(t), vec![(t.len() - 8, 8)]);
    }

    /// Every node's name, entries (name, type, value) and span, however the file was parsed.
    fn dump(nodes: &[KdlNode], out: &mut Vec<String>) {
        for n in nodes {
            out.push(format!("node {} {:?}", n.name().value(), n.span()));
            for e in n.entries() {
                out.push(format!(
                    "  {:?} {:?} {:?} {:?} {:?} {:?}",
                    e.name().map(|k| (k.value().to_string(), k.span())),
                    e.ty().map(|t| (t.value().to_string(), t.span())),
                    e.value(),
                    e.span(),
                    // the span a diagnostic points at
                    e.name().map(|_| ()),
                    e.ty().is_some()
                ));
            }
            if let Some(c) = n.children() {
                dump(c.nodes(), out);
            }
        }
    }

    #[test]
    fn long_lines_parse_in_pieces_as_whole() {
        let mut values = String::new();
        for i in 0..9000 {
            values.push_str(match i % 9 {
                0 => "12 ",
                1 => "-3.5e2 ",
                2 => "\"a b\\\" c\" ",
                3 => "#\"raw \" }\"# ",
                4 => "k=1 ",
                5 => "(u8)7 ",
                6 => "/* { ; */ #true ",
                7 => "key = \"v\" ",
                _ => "word\t",
            });
        }
        let text = format!(
            "experiment x\nbench b {{\n    sweep i {values}// tail {{\n    run \"true\"\n}}\nlast 1 2 {values}\n"
        );
        assert!(text.len() > 2 * LONG_LINE);
        let runs = long_runs(&text, 3);
        assert_eq!(runs.len(), 2, "two long lines");
        assert!(runs.iter().all(|r| r.cuts.len() == 3));
        let whole = KdlDocument::parse_v2(&text).expect("parses");
        let mut a = Vec::new();
        dump(whole.nodes(), &mut a);
        assert!(a.len() > 18_000);
        // many pieces: cuts land beside every kind of entry
        for threads in [3, 97, 1000] {
            let pieces = parse_long_lines(&text, threads).expect("parsed in pieces");
            let mut b = Vec::new();
            dump(pieces.nodes(), &mut b);
            assert_eq!(a, b, "{threads} pieces");
        }
        // a line with a brace, a slashdash or a continuation is left whole
        for odd in ["{ }", "/- 1", "\\\n 2"] {
            let t = format!("n 1 2 {values} {odd}\n");
            assert!(long_runs(&t, 3).is_empty(), "{odd}");
        }
        // a piece that does not parse: the caller parses the whole file for its diagnostics
        let bad = format!("n 1 2 {values} 1.2.3 {values}\n");
        assert!(parse_long_lines(&bad, 3).is_none());
        let src = Source::new("bad.kdl", bad);
        let mut diags = Diags::default();
        assert!(parse(&src, &mut diags).is_none());
        assert!(diags.has_errors());
    }

    #[test]
    fn a_mangled_long_line_parses_in_pieces_exactly_when_whole() {
        let line: String = (0..7000).map(|i| format!("{i} \"s{i}\" ")).collect();
        let base = format!("a {{\n  n 1 {line}\n}}\n");
        let bytes: &[&str] = &[
            "\"", "=", "(", ")", "/*", "*/", "#", "{", "\\", "\n", ";", "/-", " ", "1.", "x",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut same, mut refused) = (0, 0);
        for _ in 0..16 {
            let mut t = base.clone();
            for _ in 0..1 + next() % 3 {
                let at = 8 + (next() as usize) % (t.len() - 10);
                if t.is_char_boundary(at) {
                    t.insert_str(at, bytes[(next() as usize) % bytes.len()]);
                }
            }
            let whole = KdlDocument::parse_v2(&t).ok();
            match (whole, parse_long_lines(&t, 4)) {
                (Some(w), Some(p)) => {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    dump(w.nodes(), &mut a);
                    dump(p.nodes(), &mut b);
                    assert_eq!(a, b, "{t}");
                    same += 1;
                }
                (None, Some(_)) => panic!("pieces parsed what the whole file does not: {t}"),
                _ => refused += 1,
            }
        }
        assert!(same > 0 && refused > 0, "{same} same, {refused} refused");
    }

    #[test]
    fn v1_detection() {
        assert!(is_kdl_v1("node flag=true\n"));
        assert!(!is_kdl_v1("node flag=#true\n"));
    }
}
