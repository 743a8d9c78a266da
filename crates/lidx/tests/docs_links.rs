//! Every link in README.md and docs/**/*.md holds: a relative link names a file or directory
//! of the repository, and its anchor (`path#anchor`, or `#anchor` within the page) a heading
//! of that markdown file, by GitHub's slugs; an http(s) link is checked for its form only.
//! All broken links are reported at once.

#![expect(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a failed test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The repository's root: this crate is `crates/lidx`.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `README.md` and every `.md` file under `docs/`, sorted.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut files);
    files.sort();
    files
}

/// A link's destination and the line (1-based) it ends on.
#[derive(Debug, PartialEq, Eq)]
struct Link {
    line: usize,
    target: String,
}

/// Whether `line` opens or closes a fenced code block: returns the fence (its character and
/// length) when it is one.
fn fence(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let c = trimmed.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = trimmed.chars().take_while(|&x| x == c).count();
    (n >= 3).then_some((c, n))
}

/// The lines of `text` outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut open: Option<(char, usize)> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match (open, fence(line)) {
            (None, Some(f)) => open = Some(f),
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n => open = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// `line` without its inline code spans (a run of backticks up to the next run as long).
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = chars[i..].iter().take_while(|&&c| c == '`').count();
        // Find the closing run of exactly n backticks.
        let mut j = i + n;
        let mut closed = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = chars[j..].iter().take_while(|&&c| c == '`').count();
                if m == n {
                    closed = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => {
                out.push_str("CODE");
                i = end;
            }
            None => {
                // No closing run: the backticks are literal.
                out.extend(&chars[i..i + n]);
                i += n;
            }
        }
    }
    out
}

/// The destination of an inline link whose `(` is at byte `open` of `s`: up to the
/// unbalanced `)` or the first space (a title may follow), or between `<` and `>`.
fn destination(s: &str, open: usize) -> Option<String> {
    let rest = &s[open + 1..];
    if let Some(inner) = rest.strip_prefix('<') {
        return inner.find('>').map(|end| inner[..end].to_string());
    }
    let mut depth = 0usize;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(rest[..i].to_string()),
            ')' => depth -= 1,
            c if c.is_whitespace() => return Some(rest[..i].to_string()),
            _ => {}
        }
    }
    None
}

/// Every link of a markdown text outside code: inline links and images
/// (`[text](dest)`, `![alt](dest)`) and reference definitions (`[label]: dest`).
fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    for (line_no, line) in prose_lines(text) {
        let line = without_code_spans(line);
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && !trimmed.starts_with("[^")
            && let Some(end) = trimmed.find(']')
            && trimmed[end + 1..].starts_with(':')
        {
            let dest = trimmed[end + 2..].split_whitespace().next().unwrap_or("");
            if !dest.is_empty() {
                out.push(Link {
                    line: line_no,
                    target: dest.trim_matches(|c| c == '<' || c == '>').to_string(),
                });
            }
            continue;
        }
        let mut from = 0;
        while let Some(at) = line[from..].find("](") {
            let open = from + at + 1;
            match destination(&line, open) {
                Some(target) => out.push(Link {
                    line: line_no,
                    target,
                }),
                None => out.push(Link {
                    line: line_no,
                    target: line[open + 1..].to_string(),
                }),
            }
            from = open + 1;
        }
    }
    out
}

/// GitHub's anchor for a heading's text: inline links reduced to their text, lower case,
/// every character but letters, digits, `-`, `_` and spaces dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // [text](url) -> text
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        rest = match destination(after, 0) {
            Some(dest) => after[1 + dest.len()..].strip_prefix(')').unwrap_or(""),
            None => "",
        };
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown text's ATX headings, with GitHub's `-1`, `-2`, ... for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let level = trimmed.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&level) {
            continue;
        }
        let body = &trimmed[level..];
        if !(body.is_empty() || body.starts_with(' ') || body.starts_with('\t')) {
            continue;
        }
        // A closing sequence of #s, after a space, is not part of the heading.
        let body = body.trim();
        let body = match body.trim_end_matches('#') {
            b if b.len() < body.len() && (b.is_empty() || b.ends_with(' ')) => b.trim_end(),
            _ => body,
        };
        let base = slug(body);
        let n = seen.entry(base.clone()).or_insert(0);
        let anchor = if *n == 0 { base } else { format!("{base}-{n}") };
        *n += 1;
        out.insert(anchor);
    }
    out
}

/// Whether an http(s) URL is well formed: a host of letters, digits, `.` and `-` (and an
/// optional port), no spaces or characters a URL cannot hold.
fn url_ok(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let host_port = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match host_port.rsplit_once(':') {
        Some((h, port)) if !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host_port,
    };
    !host.is_empty()
        && host.contains('.')
        && !host.starts_with(['.', '-'])
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        && !url
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '`' | '{' | '}' | '|'))
}

/// `%XX` escapes decoded (as in `a%20b.md`).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `path` with `.` and `..` resolved lexically; `None` when it climbs above its root.
fn normalized(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// Every broken link of `files` (paths under `root`), one line each:
/// `file:line: target: problem`.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut anchor_cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut anchors_of = |path: &Path| -> Option<BTreeSet<String>> {
        if let Some(a) = anchor_cache.get(path) {
            return Some(a.clone());
        }
        let a = anchors(&fs::read_to_string(path).ok()?);
        anchor_cache.insert(path.to_path_buf(), a.clone());
        Some(a)
    };
    for file in files {
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let text = fs::read_to_string(file).unwrap();
        for link in links(&text) {
            let mut report = |problem: String| {
                problems.push(format!(
                    "{shown}:{}: ({}): {problem}",
                    link.line, link.target
                ));
            };
            let target = link.target.as_str();
            if target.starts_with("http://") || target.starts_with("https://") {
                if !url_ok(target) {
                    report("not a well-formed URL".to_string());
                }
                continue;
            }
            if target.starts_with("mailto:") {
                continue;
            }
            if target.is_empty() {
                report("empty link".to_string());
                continue;
            }
            let (path_part, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target, None),
            };
            if path_part.contains(':') {
                report("neither a relative path nor an http(s) URL".to_string());
                continue;
            }
            if path_part.starts_with('/') {
                report("an absolute path: links must be relative to the page".to_string());
                continue;
            }
            let dest = if path_part.is_empty() {
                file.clone()
            } else {
                let joined = file.parent().unwrap().join(percent_decoded(path_part));
                match normalized(&joined) {
                    Some(p) if p.starts_with(root) => p,
                    _ => {
                        report("points outside the repository".to_string());
                        continue;
                    }
                }
            };
            if !dest.exists() {
                report("no such file or directory".to_string());
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if dest.extension().is_none_or(|e| e != "md") {
                report("an anchor into a file that is not markdown".to_string());
                continue;
            }
            match anchors_of(&dest) {
                Some(found) if found.contains(anchor) => {}
                Some(_) => report(format!(
                    "{} has no heading with the anchor #{anchor}",
                    dest.strip_prefix(root).unwrap_or(&dest).display()
                )),
                None => report("cannot be read".to_string()),
            }
        }
    }
    problems
}

#[test]
fn every_link_in_the_readme_and_the_docs_holds() {
    let root = repo_root();
    let files = markdown_files(&root);
    assert!(
        files.len() > 1,
        "no markdown files under {}",
        root.display()
    );
    let problems = broken_links(&root, &files);
    assert!(
        problems.is_empty(),
        "{} broken link(s) in README.md and docs/:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn broken_links_are_all_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::create_dir_all(root.join("docs/guide")).unwrap();
    fs::write(
        root.join("docs/guide/a.md"),
        "# Page A\n\n## The `lidx sort` command: a sorted copy\n\n## Twice\n\n## Twice\n\n```\n# not a heading\n```\n",
    )
    .unwrap();
    fs::write(
        root.join("README.md"),
        "# Top\n\n\
         [ok](docs/guide/a.md), [ok anchor](docs/guide/a.md#the-lidx-sort-command-a-sorted-copy),\n\
         [second twice](docs/guide/a.md#twice-1), [self](#top), ![img](docs/guide),\n\
         [web](https://example.com/x?y=1#z), `[in code](missing.md)`\n\n\
         ```\n[in a fence](missing.md)\n```\n\n\
         [missing](docs/guide/b.md) and [bad anchor](docs/guide/a.md#nowhere)\n\
         [fenced heading](docs/guide/a.md#not-a-heading) [bad url](https://exa mple.com)\n\
         [outside](../elsewhere.md) [absolute](/etc/passwd)\n\n\
         [ref]: docs/guide/c.md\n",
    )
    .unwrap();
    let problems = broken_links(&root, &[root.join("README.md")]);
    let targets: Vec<&str> = problems
        .iter()
        .map(|p| p.split(" (").nth(1).unwrap().split("):").next().unwrap())
        .collect();
    assert_eq!(
        targets,
        [
            "docs/guide/b.md",
            "docs/guide/a.md#nowhere",
            "docs/guide/a.md#not-a-heading",
            "https://exa",
            "../elsewhere.md",
            "/etc/passwd",
            "docs/guide/c.md",
        ],
        "{problems:#?}"
    );
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug("1.1 Header (block 0)"), "11-header-block-0");
    assert_eq!(
        slug("`lidx experiment lsm-joins`: paper 5's Figs. 5–12 and 13c"),
        "lidx-experiment-lsm-joins-paper-5s-figs-512-and-13c"
    );
    assert_eq!(
        slug("The PGM beside the C++ PGM-index"),
        "the-pgm-beside-the-c-pgm-index"
    );
    assert_eq!(
        slug("See [the guide](guide/README.md) now"),
        "see-the-guide-now"
    );
    assert_eq!(slug("snake_case and ε"), "snake_case-and-ε");
}
