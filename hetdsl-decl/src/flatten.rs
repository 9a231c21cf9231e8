//! Flatten an OpenCL source file and its `#include`s into one string (through ocl-include),
//! with `#line` directives so that compilers name the original file and line in their logs.
//!
//! Two users, one copy: the macros read kernels at compile time, and the runtime's
//! `KernelSource::from_file` reads them at run time.

use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A flattened kernel source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flattened {
    /// The source with `#line` directives, ready for `clCreateProgramWithSource`.
    pub text: String,
    /// The flattened lines without directives, each with the file and 1-based line it came from.
    pub lines: Vec<(String, PathBuf, usize)>,
    /// Every file read (the root first), for rebuild tracking.
    pub files: Vec<PathBuf>,
}

/// Records each file the parser reads.
struct Recording {
    inner: ocl_include::source::Fs,
    seen: Rc<RefCell<Vec<PathBuf>>>,
}

impl ocl_include::Source for Recording {
    fn read(&self, path: &Path, dir: Option<&Path>) -> io::Result<(PathBuf, String)> {
        let (abs, text) = self.inner.read(path, dir).map_err(|e| {
            let why = match e.kind() {
                io::ErrorKind::NotFound => "not found".to_string(),
                _ => e.to_string(),
            };
            // ocl-include adds the including file; say which file and where it was looked for.
            // (Not `NotFound`: ocl-include would replace this message with its own, which
            // names neither.)
            io::Error::other(format!(
                "`{}` {why} (searched beside the including file and in the include directories)",
                path.display()
            ))
        })?;
        let mut seen = self.seen.borrow_mut();
        if !seen.contains(&abs) {
            seen.push(abs.clone());
        }
        Ok((abs, text))
    }
}

/// Read `path` (relative to the current directory, or else found in `include_dirs`) and
/// everything it includes (searched beside the including file, then in `include_dirs`). `#line` names files relative to the current directory.
pub fn flatten(path: &Path, include_dirs: &[PathBuf]) -> io::Result<Flattened> {
    let cwd = std::env::current_dir().ok();
    flatten_named(path, include_dirs, cwd.as_deref())
}

/// [`flatten`], with `#line` naming files relative to `name_base` when they lie under it (the
/// macros use the calling crate's manifest directory, so that embedded sources and messages do
/// not depend on where the crate was checked out).
pub fn flatten_named(
    path: &Path,
    include_dirs: &[PathBuf],
    name_base: Option<&Path>,
) -> io::Result<Flattened> {
    let mut fs = ocl_include::source::Fs::builder();
    for dir in include_dirs {
        fs = fs.include_dir(dir)?;
    }
    let seen = Rc::new(RefCell::new(Vec::new()));
    // A fresh parser per file: ocl-include keeps its `#pragma once` cache across parses.
    let parser = ocl_include::Parser::builder()
        .add_source(Recording { inner: fs.build(), seen: seen.clone() })
        .build();
    // ocl-include searches a top file given without a directory to look beside only in the
    // include directories; a relative path names a file under the current directory first.
    let top = match std::env::current_dir() {
        Ok(cwd) if path.is_relative() && cwd.join(path).is_file() => cwd.join(path),
        _ => path.to_path_buf(),
    };
    let node = parser.parse(&top)?;
    let (flat, index) = node.collect();

    let mut text = String::with_capacity(flat.len() + 256);
    let mut lines = Vec::new();
    let mut expected: Option<(PathBuf, usize)> = None;
    for (i, line) in flat.lines().enumerate() {
        let (file, line0) = index.search(i).unwrap_or_else(|| (top.clone(), i));
        let origin = (file.clone(), line0 + 1);
        if expected.as_ref() != Some(&origin) {
            text.push_str(&format!("#line {} \"{}\"\n", origin.1, display_name(&file, name_base)));
        }
        text.push_str(line);
        text.push('\n');
        lines.push((line.to_string(), file, line0 + 1));
        expected = Some((origin.0, origin.1 + 1));
    }
    let files = seen.borrow().clone();
    Ok(Flattened { text, lines, files })
}

/// The name used in `#line`: the file name relative to `base` when possible, with characters a
/// C string literal cannot hold escaped.
fn display_name(file: &Path, base: Option<&Path>) -> String {
    let shown = base.and_then(|b| file.strip_prefix(b).ok()).unwrap_or(file);
    shown.display().to_string().replace('\\', "\\\\").replace('"', "\\\"")
}

/// The file and 1-based line that the 0-based `line` of a text with `#line` directives came
/// from (`#line N "file"` or `#line N`); `fallback` names the file before any directive.
pub fn origin(text: &str, line: usize, fallback: &str) -> (String, usize) {
    let mut file = fallback.to_string();
    let mut next = 1usize; // the line number the next line of text has
    for (i, l) in text.split('\n').enumerate() {
        if i == line {
            return (file, next);
        }
        let t = l.trim_start();
        let directive =
            t.strip_prefix('#').map(str::trim_start).and_then(|d| d.strip_prefix("line"));
        match directive.map(str::trim).and_then(|rest| {
            let (n, name) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            Some((n.parse::<usize>().ok()?, name.trim()))
        }) {
            Some((n, name)) => {
                next = n;
                if let Some(q) = name.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
                    file = q.replace("\\\"", "\"").replace("\\\\", "\\");
                }
            }
            None => next += 1,
        }
    }
    (file, next)
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_map_back_through_line_directives() {
        let text = "#line 1 \"a.cl\"\nx\ny\n#line 7 \"inc/b.h\"\nz\n#line 3\nw\n";
        let at = |l| super::origin(text, l, "top.cl");
        assert_eq!(at(1), ("a.cl".to_string(), 1));
        assert_eq!(at(2), ("a.cl".to_string(), 2));
        assert_eq!(at(4), ("inc/b.h".to_string(), 7));
        assert_eq!(at(6), ("inc/b.h".to_string(), 3));
        assert_eq!(super::origin("k\nl", 1, "t.cl"), ("t.cl".to_string(), 2));
    }
}
