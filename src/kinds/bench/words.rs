//! How `shell "none"` reads a command: its words, as a shell would split them, never expanded.

/// What `shell "none"` cannot run: a character only a shell gives a meaning, a template value
/// inside quotes (it is one argument already), or a quote left open.
#[derive(Debug, Clone, PartialEq)]
pub enum NeedsShell {
    Syntax(char),
    ValueInQuotes,
    Unclosed(char),
}

/// The words of a command template for `shell "none"`, split as a POSIX shell splits them — on
/// blanks outside quotes, `'…'` literal, `"…"` with `\"`, `\\`, `\$` and `` \` `` escaped, a
/// backslash outside quotes escaping the next character — with no expansion, so the remote
/// shell that runs the same text over ssh reads the same words. `{{ }}` tags are kept whole,
/// each rendered afterwards as one argument. hyperfine's `-N` splits the same way.
pub fn template_words(cmd: &str) -> Result<Vec<String>, NeedsShell> {
    let b: Vec<char> = cmd.chars().collect();
    let (mut words, mut cur, mut started) = (Vec::new(), String::new(), false);
    let (mut quote, mut depth, mut i) = (None::<char>, 0usize, 0);
    while i < b.len() {
        let c = b[i];
        let two = |c1: char, c2: char| c == c1 && b.get(i + 1) == Some(&c2);
        let opens = two('{', '{') || two('{', '%');
        if opens && quote.is_some() {
            return Err(NeedsShell::ValueInQuotes);
        }
        if opens || (depth > 0 && (two('}', '}') || two('%', '}'))) {
            depth = if opens { depth + 1 } else { depth - 1 };
            cur.extend([c, b[i + 1]]);
            started = true;
            i += 2;
            continue;
        }
        if depth > 0 {
            cur.push(c);
            i += 1;
            continue;
        }
        match quote {
            Some('\'') if c == '\'' => quote = None,
            Some('\'') => cur.push(c),
            Some(_) if c == '"' => quote = None,
            Some(_) if c == '\\' && matches!(b.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                cur.push(b[i + 1]);
                i += 1;
            }
            Some(_) if c == '$' || c == '`' => return Err(NeedsShell::Syntax(c)),
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                started = true;
            }
            None if c == '\\' => match b.get(i + 1) {
                Some('\n') | None => return Err(NeedsShell::Syntax('\\')),
                Some(&n) => {
                    cur.push(n);
                    started = true;
                    i += 1;
                }
            },
            None if c == '\n' || "|&;<>()$`*?#~".contains(c) => return Err(NeedsShell::Syntax(c)),
            None if c == ' ' || c == '\t' => {
                if started {
                    words.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            None => {
                cur.push(c);
                started = true;
            }
        }
        i += 1;
    }
    if let Some(q) = quote {
        return Err(NeedsShell::Unclosed(q));
    }
    if started {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_shell_splits_quoted_words_as_hyperfine_n_does_and_says_what_needs_a_shell() {
        let w = |s: &str| template_words(s);
        let ok = |v: &[&str]| Ok(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(w("echo \"a b\""), ok(&["echo", "a b"]));
        assert_eq!(
            w("  printf '%s|%s' x  y\t"),
            ok(&["printf", "%s|%s", "x", "y"])
        );
        assert_eq!(w("a\\ b \"\" c"), ok(&["a b", "", "c"]));
        assert_eq!(w("say \"q\\\"x\\$y\\z\""), ok(&["say", "q\"x$y\\z"]));
        assert_eq!(w("ab'c d'\"e\"f"), ok(&["abc def"]));
        // a tag is kept whole, spaces and all, for rendering as one argument
        assert_eq!(
            w("run {{ a ~ b }} x{{ c }}"),
            ok(&["run", "{{ a ~ b }}", "x{{ c }}"])
        );
        // NBSP is no blank to a shell
        assert_eq!(w("a\u{a0}b"), ok(&["a\u{a0}b"]));
        assert_eq!(w("echo \"$HOME\""), Err(NeedsShell::Syntax('$')));
        assert_eq!(w("a | b"), Err(NeedsShell::Syntax('|')));
        assert_eq!(w("ls *.rs"), Err(NeedsShell::Syntax('*')));
        assert_eq!(w("a\\"), Err(NeedsShell::Syntax('\\')));
        assert_eq!(w("echo \"{{ x }}\""), Err(NeedsShell::ValueInQuotes));
        assert_eq!(w("echo '{{ x }}'"), Err(NeedsShell::ValueInQuotes));
        assert_eq!(w("echo 'a"), Err(NeedsShell::Unclosed('\'')));
        assert_eq!(w("echo \"a"), Err(NeedsShell::Unclosed('"')));
    }
}
