//! The layering of ARCHITECTURE.md, checked: no two modules of `src/` depend on each other
//! (directly or through others). A cycle means two modules that cannot be understood, or
//! changed, one without the other — the design says to split what they share out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// Every module file of the library: its path (`["ops", "merge"]`) and its code without
/// comments and unit tests.
fn modules() -> BTreeMap<Module, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            let code: Vec<&str> = code
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            found.insert(module, code.join("\n"));
        }
    }
    found
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
    let group = regex::Regex::new(r"use (crate|(?:super::)+)(?:::)?\{([^}]*)\}").unwrap();
    let name = regex::Regex::new(r"[a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*").unwrap();
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
            for n in name.find_iter(&c[2]) {
                add(&c[1], n.as_str());
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
    let known = modules();
    assert!(known.len() > 100, "the source tree was found");
    let edges = dependencies(&known);
    let found: Vec<Vec<String>> = cycles(&edges)
        .into_iter()
        .map(|c| c.iter().map(|m| m.join("/")).collect())
        .collect();
    assert!(found.is_empty(), "import cycles: {found:#?}");
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

/// git runs only through the git wrapper (`src/git/`): every other module asks it, so a
/// git command line is written, confined and explained in one place.
#[test]
fn git_runs_only_through_the_git_wrapper() {
    let spawn = regex::Regex::new(r#"Command::new\(\s*"git"\s*\)|\[\s*"git"\s*,"#).unwrap();
    let outside: Vec<String> = modules()
        .into_iter()
        .filter(|(module, _)| module.first().is_none_or(|m| m != "git"))
        .filter(|(_, code)| spawn.is_match(code))
        .map(|(module, _)| module.join("/"))
        .collect();
    assert!(outside.is_empty(), "git run outside src/git/: {outside:?}");
}
