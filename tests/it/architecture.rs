//! The layering of ARCHITECTURE.md, checked: the crates depend on each other only in the
//! order the crate table declares (read from `cargo metadata`), and no two modules of a
//! crate depend on each other (directly or through others). A cycle means two modules that
//! cannot be understood, or changed, one without the other — the design says to split what
//! they share out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The source directory of every crate of the workspace: `src/` and `crates/*/src/`.
fn crate_sources() -> Vec<PathBuf> {
    let mut found = vec![workspace().join("src")];
    for entry in std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
    {
        if entry.path().join("Cargo.toml").is_file() {
            found.push(entry.path().join("src"));
        }
    }
    found
}

/// Every module file of one crate: its path (`["ops", "merge"]`) and its code without
/// comments and unit tests.
fn modules(src: &Path) -> BTreeMap<Module, String> {
    let src = src.to_path_buf();
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin") {
                    dirs.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let module: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .filter(|c| c != "lib")
                .collect();
            let text = std::fs::read_to_string(&path).unwrap();
            // The unit tests inline at the end; a `mod tests;` declared anywhere hides
            // nothing after it.
            let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or("");
            found.insert(module, without_comments(code));
        }
    }
    found
}

/// `code` without its comments (`//` to the line's end, `/* */` nested), string and
/// character literals kept whole: a brace or a path in a comment is not code, and a
/// `/*` in a string (`"src/**"`) opens no comment.
fn without_comments(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(at(i + 1), '"' | '#')
            && !(i > 0
                && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
                && chars[i - 1] != 'b')
        {
            // A raw string: r"…", r#"…"#.
            let start = i;
            i += 1;
            let mut hashes = 0;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            if at(i) != '"' {
                out.extend(&chars[start..i]);
                continue;
            }
            i += 1;
            while i < chars.len() && !(chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                i += 1;
            }
            i = (i + 1 + hashes).min(chars.len());
            out.extend(&chars[start..i]);
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(chars.len());
            out.extend(&chars[start..i]);
        } else if c == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A character literal ('{', '\''); a lifetime is copied as it comes.
            let start = i;
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i = (i + 1).min(chars.len());
            out.extend(&chars[start..i]);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[test]
fn comments_are_not_code_and_strings_open_no_comment() {
    let code = "use a; // b::{\n/* c /* d */ e */ f\nlet g = \"h/**\"; let i = '{'; let j = '\\''; // k\nr#\"l // m\"# n /* o */";
    assert_eq!(
        without_comments(code),
        "use a; \n f\nlet g = \"h/**\"; let i = '{'; let j = '\\''; \nr#\"l // m\"# n "
    );
}

/// The longest module `parts` starts with, if any.
fn resolve(known: &BTreeMap<Module, String>, parts: &[String]) -> Option<Module> {
    (1..=parts.len())
        .rev()
        .map(|k| parts[..k].to_vec())
        .find(|m| known.contains_key(m))
}

/// Which modules each module names (`crate::…`, `super::…`, `use super::{…}`), its
/// ancestors left out (a child may use what its parent declares).
fn dependencies(known: &BTreeMap<Module, String>) -> BTreeMap<Module, BTreeSet<Module>> {
    let path = regex::Regex::new(
        r"\b(crate|(?:super::)+)(?:::)?((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)",
    )
    .unwrap();
    let group =
        regex::Regex::new(r"use (crate|(?:super::)+)(?:::)?((?:[a-z_][a-z0-9_]*::)*)\{").unwrap();
    let children =
        regex::Regex::new(r"(?m)^\s*(?:pub(?:\([a-z]+\))? )?mod ([a-z_][a-z0-9_]*);").unwrap();
    let mut edges = BTreeMap::new();
    for (module, code) in known {
        let base = |anchor: &str| -> Module {
            if anchor == "crate" {
                Vec::new()
            } else {
                let ups = anchor.matches("super::").count();
                module[..module.len().saturating_sub(ups)].to_vec()
            }
        };
        let mut targets = BTreeSet::new();
        let mut add = |anchor: &str, rest: &str| {
            let mut parts = base(anchor);
            parts.extend(rest.split("::").map(str::to_owned));
            if let Some(t) = resolve(known, &parts)
                && t != *module
                && !module.starts_with(&t)
            {
                targets.insert(t);
            }
        };
        for c in path.captures_iter(code) {
            add(&c[1], &c[2]);
        }
        for c in group.captures_iter(code) {
            let open = c.get(0).unwrap().end();
            let Some(inner) = braced(&code[open..]) else {
                continue;
            };
            for used in group_paths(inner) {
                // `use crate::b::{c}` names `b::c`; `use crate::b::{self}`, `b`.
                let prefix = c[2].trim_end_matches("::");
                match (prefix.is_empty(), used.as_str()) {
                    (true, _) => add(&c[1], &used),
                    (false, "self") => add(&c[1], prefix),
                    (false, _) => add(&c[1], &format!("{prefix}::{used}")),
                }
            }
        }
        // A child module used by its relative path (`usage::wait(…)`, `use self::usage`,
        // `use usage::X`): the parent depends on it — an edge the `crate::`/`super::`
        // paths do not show, through which a circle can close.
        for child in children.captures_iter(code) {
            let child = &child[1];
            let used = regex::Regex::new(&format!(r"(?:^|[^:\w])(?:self::)?{child}::"))
                .unwrap()
                .is_match(code);
            let mut target = module.clone();
            target.push(child.to_owned());
            if used && known.contains_key(&target) {
                targets.insert(target);
            }
        }
        edges.insert(module.clone(), targets);
    }
    edges
}

/// The text up to the brace that closes one already open (`a, b::{c}} …` → `a, b::{c}`).
fn braced(text: &str) -> Option<&str> {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[..i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The paths a `use` group names, nested groups expanded: `a::{b, c::{self, d}}, e as f`
/// → `a::b`, `a::c`, `a::c::d`, `e`.
fn group_paths(group: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    let mut paths = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        match item.split_once('{') {
            Some((prefix, rest)) => {
                let prefix = prefix.trim().trim_end_matches("::");
                for inner in group_paths(braced(rest).unwrap_or(rest)) {
                    paths.push(if inner == "self" {
                        prefix.to_owned()
                    } else {
                        format!("{prefix}::{inner}")
                    });
                }
            }
            None => {
                let path = item.split(" as ").next().unwrap_or(item).trim();
                if path != "*" {
                    paths.push(path.trim_end_matches("::*").to_owned());
                }
            }
        }
    }
    paths
}

/// The groups of modules that depend on each other (Tarjan's strongly connected
/// components of more than one module).
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.edges[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_module_depends_on_a_module_that_depends_on_it() {
    let sources = crate_sources();
    assert!(sources.len() > 2, "the crates were found: {sources:?}");
    let mut modules_seen = 0;
    for src in sources {
        let known = modules(&src);
        modules_seen += known.len();
        let edges = dependencies(&known);
        let found: Vec<Vec<String>> = cycles(&edges)
            .into_iter()
            .map(|c| c.iter().map(|m| m.join("/")).collect())
            .collect();
        assert!(
            found.is_empty(),
            "import cycles in {}: {found:#?}",
            src.display()
        );
    }
    assert!(modules_seen > 100, "the source tree was found");
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut known = BTreeMap::new();
    known.insert(vec!["a".to_owned()], "use crate::b::thing;".to_owned());
    known.insert(vec!["b".to_owned()], "fn f() { crate::a::g() }".to_owned());
    known.insert(
        vec!["b".to_owned(), "c".to_owned()],
        "use super::super::a;".to_owned(),
    );
    known.insert(vec!["d".to_owned()], "use crate::{a, b::c};".to_owned());
    let edges = dependencies(&known);
    assert_eq!(cycles(&edges).len(), 1);
    assert_eq!(edges[&vec!["d".to_owned()]].len(), 2);
    // The circle through a child named in a group after its parent's path, with a
    // comment holding a brace inside the group: e → f::g → e.
    let mut known = BTreeMap::new();
    let m = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    known.insert(m(&["e"]), without_comments("use crate::f::{/* } */ g};"));
    known.insert(m(&["f"]), "pub mod g;".to_owned());
    known.insert(m(&["f", "g"]), "use crate::e::X;".to_owned());
    assert_eq!(cycles(&dependencies(&known)).len(), 1);
    // A circle closed through a parent that uses its child by its relative path:
    // s → p (crate path), p → p/u (`mod u;` and `u::f()`), p/u → l, l → s.
    let mut known = BTreeMap::new();
    let m = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    known.insert(m(&["s"]), "fn f() { crate::p::run() }".to_owned());
    known.insert(m(&["p"]), "mod u;\nfn run() { u::wait() }".to_owned());
    known.insert(m(&["p", "u"]), "fn wait() { crate::l::text() }".to_owned());
    known.insert(m(&["l"]), "use crate::s::Session;".to_owned());
    assert_eq!(cycles(&dependencies(&known)).len(), 1);
}

/// git runs only through the git wrapper (the crate `liza-git`): every other module asks
/// it, so a git command line is written, confined and explained in one place.
#[test]
fn git_runs_only_through_the_git_wrapper() {
    let spawn = regex::Regex::new(r#"Command::new\(\s*"git"\s*\)|\[\s*"git"\s*,"#).unwrap();
    let wrapper = workspace().join("crates/liza-git/src");
    let sources = crate_sources();
    assert!(
        sources.contains(&wrapper),
        "the git wrapper is a crate: {sources:?}"
    );
    let outside: Vec<String> = sources
        .into_iter()
        .filter(|src| *src != wrapper)
        .flat_map(|src| {
            modules(&src).into_iter().map(move |(module, code)| {
                (format!("{}: {}", src.display(), module.join("/")), code)
            })
        })
        .filter(|(_, code)| spawn.is_match(code))
        .map(|(module, _)| module)
        .collect();
    assert!(outside.is_empty(), "git run outside liza-git: {outside:?}");
}

/// The crates in the order ARCHITECTURE.md's crate table declares them, bottom up.
fn declared_crates() -> Vec<String> {
    let map = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let table = map
        .split("\n## Crates\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a section `## Crates`")
        .split("\n## ")
        .next()
        .unwrap_or("");
    let row = regex::Regex::new(r"(?m)^\| `([a-z0-9-]+)` \|").unwrap();
    row.captures_iter(table).map(|c| c[1].to_owned()).collect()
}

/// Each workspace crate's dependencies on other workspace crates, as `cargo metadata`
/// reports them: (crate, dependency, whether only for its tests).
fn crate_graph() -> Vec<(String, String, bool)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut graph = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap();
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            if members.contains(dep_name) {
                let dev_only = dep["kind"].as_str() == Some("dev");
                graph.push((name.to_owned(), dep_name.to_owned(), dev_only));
            }
        }
    }
    for member in members {
        graph.push((member.to_owned(), member.to_owned(), true));
    }
    graph
}

/// What breaks the declared order: a crate not declared, a crate declared that does not
/// exist, a dependency on a crate declared above (or on itself, but for its own tests).
fn order_violations(declared: &[String], graph: &[(String, String, bool)]) -> Vec<String> {
    let rank = |name: &str| declared.iter().position(|d| d == name);
    let mut found = Vec::new();
    let crates: BTreeSet<&str> = graph.iter().map(|(c, _, _)| c.as_str()).collect();
    for name in &crates {
        if rank(name).is_none() {
            found.push(format!("{name} is not in the crate table"));
        }
    }
    for name in declared {
        if !crates.contains(name.as_str()) {
            found.push(format!(
                "{name} is in the crate table but not in the workspace"
            ));
        }
    }
    for (name, dep, dev_only) in graph {
        let (Some(at), Some(dep_at)) = (rank(name), rank(dep)) else {
            continue;
        };
        if dep_at > at || (dep_at == at && !dev_only) {
            found.push(format!("{name} depends on {dep}, declared above it"));
        }
    }
    found
}

#[test]
fn crates_depend_only_on_the_crates_declared_below_them() {
    let declared = declared_crates();
    assert!(declared.len() > 2, "the crate table was read: {declared:?}");
    let violations = order_violations(&declared, &crate_graph());
    assert!(
        violations.is_empty(),
        "ARCHITECTURE.md's crate order broken: {violations:#?}"
    );
}

#[test]
fn the_order_check_finds_an_upward_dependency() {
    let declared: Vec<String> = ["low", "high"].map(str::to_owned).to_vec();
    let edge = |a: &str, b: &str, dev: bool| (a.to_owned(), b.to_owned(), dev);
    let with = |extra: (String, String, bool)| {
        let mut graph = vec![edge("low", "low", true), edge("high", "high", true)];
        graph.push(extra);
        order_violations(&declared, &graph)
    };
    assert!(with(edge("high", "low", false)).is_empty());
    assert_eq!(with(edge("low", "high", false)).len(), 1);
    assert_eq!(with(edge("low", "high", true)).len(), 1);
    assert_eq!(with(edge("high", "high", false)).len(), 1);
    assert_eq!(with(edge("other", "low", false)).len(), 1);
    let with_ghost: Vec<String> = ["low", "high", "ghost"].map(str::to_owned).to_vec();
    assert_eq!(
        order_violations(
            &with_ghost,
            &[edge("low", "low", true), edge("high", "high", true)]
        )
        .len(),
        1
    );
}

/// The layer of each top-level module of the `liza` crate, bottom up, as the layer
/// table of ARCHITECTURE.md lists them (backticked names in its second column that are
/// modules of `src/`).
fn declared_layers(modules: &BTreeSet<String>) -> BTreeMap<String, usize> {
    let map = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let section = map.split("## Layers").nth(1).unwrap();
    let section = section.split("\n## ").next().unwrap();
    let name = regex::Regex::new(r"`([a-z_]+)`").unwrap();
    let mut layers = BTreeMap::new();
    for (row, line) in section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| layer"))
        .enumerate()
    {
        let modules_column = line.split('|').nth(2).unwrap_or("");
        for m in name.captures_iter(modules_column) {
            if modules.contains(&m[1]) {
                layers.entry(m[1].to_owned()).or_insert(row);
            }
        }
    }
    layers
}

/// The `liza` crate's modules use only their own layer and those below: a supervisor
/// never reaches into the watcher or the command line. Every top-level module has a row.
#[test]
fn the_liza_crates_modules_use_only_their_layer_and_those_below() {
    let known = modules(&workspace().join("src"));
    let top: BTreeSet<String> = known.keys().filter_map(|m| m.first().cloned()).collect();
    let layers = declared_layers(&top);
    let unplaced: Vec<&String> = top.iter().filter(|m| !layers.contains_key(*m)).collect();
    assert!(
        unplaced.is_empty(),
        "modules in no row of ARCHITECTURE.md's layer table: {unplaced:?}"
    );
    let upward = upward_uses(&dependencies(&known), &layers);
    assert!(upward.is_empty(), "uses of a layer above: {upward:?}");
}

/// `module (layer) uses module (layer)` for every use of a higher layer.
fn upward_uses(
    edges: &BTreeMap<Module, BTreeSet<Module>>,
    layers: &BTreeMap<String, usize>,
) -> Vec<String> {
    let mut found = Vec::new();
    for (from, targets) in edges {
        let Some(here) = from.first().and_then(|m| layers.get(m)) else {
            continue;
        };
        for to in targets {
            if let Some(there) = to.first().and_then(|m| layers.get(m))
                && there > here
            {
                found.push(format!(
                    "{} ({here}) uses {} ({there})",
                    from.join("::"),
                    to.join("::")
                ));
            }
        }
    }
    found
}

#[test]
fn the_layer_check_finds_an_upward_use() {
    let mut known = BTreeMap::new();
    let m = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    known.insert(m(&["ops"]), "fn f() {}".to_owned());
    known.insert(m(&["supervisor"]), "use crate::ops::f;".to_owned());
    known.insert(
        m(&["supervisor", "policy"]),
        "fn k() { crate::monitor::key() }".to_owned(),
    );
    known.insert(
        m(&["monitor"]),
        "use crate::supervisor::Console;".to_owned(),
    );
    // The last name of a nested group, over lines as rustfmt writes it.
    known.insert(
        m(&["supervisor", "run"]),
        "use crate::{\n    ops::{f, g},\n    tmux::Pane,\n};".to_owned(),
    );
    known.insert(m(&["tmux"]), "fn p() {}".to_owned());
    let layers: BTreeMap<String, usize> =
        [("ops", 0), ("supervisor", 1), ("monitor", 2), ("tmux", 2)]
            .into_iter()
            .map(|(m, l)| (m.to_owned(), l))
            .collect();
    assert_eq!(
        upward_uses(&dependencies(&known), &layers),
        [
            "supervisor::policy (1) uses monitor (2)",
            "supervisor::run (1) uses tmux (2)"
        ]
    );
    assert_eq!(
        group_paths("a::{b, c::{d, self}}, e as f, g::*"),
        ["a::b", "a::c::d", "a::c", "e", "g"]
    );
}

/// A `Result` whose error type is text: `String`, `&str`, a list of texts, a boxed
/// error, or a tuple with text in it.
fn textual_error() -> regex::Regex {
    regex::Regex::new(
        r"Result<[^;{]*?,\s*(?:(?:std::string::)?String|&(?:'\w+\s+)?str|Vec<String>|Box<dyn [^>]*Error[^>]*>|\([^()]*\bString\b[^()]*\))\s*,?\s*>",
    )
    .unwrap()
}

#[test]
fn the_text_error_check_sees_every_shape_of_text() {
    let textual = textual_error();
    for text in [
        "fn f() -> Result<(), String> {",
        "fn f() -> Result<u8, std::string::String> {",
        "fn f() -> Result<\n    Vec<u8>,\n    String,\n> {",
        "fn f() -> Result<u8, &'static str> {",
        "fn f<'a>() -> Result<u8, &'a str> {",
        "fn f() -> Result<u8, Vec<String>> {",
        "fn f() -> Result<u8, Box<dyn std::error::Error>> {",
        "type Item = Result<Entry, (usize, String)>;",
    ] {
        assert!(textual.is_match(text), "{text}");
    }
    for text in [
        "fn f() -> Result<String, GitError> {",
        "fn f() -> Result<(String, u8), Refused> {",
        "fn f() -> Result<Vec<String>, NotApplied> {",
    ] {
        assert!(!textual.is_match(text), "{text}");
    }
}

/// The library crates return typed errors (specs/style.md *Gates*): a caller can tell one
/// failure from another without reading its text.
#[test]
fn library_crates_return_no_text_as_an_error() {
    // Over the whole code, so a signature rustfmt broke over lines is read too.
    let textual = textual_error();
    let mut found = Vec::new();
    // The one exception: the built-in roles' answer readers return the list of what was
    // wrong with a model's answer, which the model is shown verbatim to answer again
    // (`builtin::ask::again`) — text for a reader, not a failure a caller tells apart.
    let readers = regex::Regex::new(r"(?s)^Result<.*, Vec<String>>$").unwrap();
    let answer_readers = ["ask", "coder", "planner", "reviewer"];
    for src in crate_sources() {
        if !src.starts_with(workspace().join("crates")) {
            continue;
        }
        for (module, code) in modules(&src) {
            let reads_answers = src.ends_with("liza-agents/src")
                && module.first().is_some_and(|m| m == "builtin")
                && module
                    .get(1)
                    .is_some_and(|m| answer_readers.contains(&m.as_str()));
            for hit in textual.find_iter(&code) {
                if reads_answers && readers.is_match(hit.as_str()) {
                    continue;
                }
                let text: Vec<&str> = hit.as_str().split_whitespace().collect();
                let at = format!("{}: {}", src.display(), module.join("/"));
                found.push(format!("{at}: {}", text.join(" ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "text as the error type in a library crate: {found:#?}"
    );
}
