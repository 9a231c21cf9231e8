//! Where a `#[coexec]` declaration stands. It expands to a function and a module of the same
//! name, which an `impl` block, a trait or an `extern` block cannot hold: there rustc reports
//! the generated items ("module is not supported in `trait`s or `impl`s"), not the attribute.
//! The macro sees only its item, so the block around it is read from the source file.

use proc_macro2::{Span, TokenStream, TokenTree};

/// A block that cannot hold a `#[coexec]` declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    Impl,
    Trait,
    Extern,
}

impl Block {
    fn phrase(self) -> &'static str {
        match self {
            Block::Impl => "an `impl` block",
            Block::Trait => "a trait",
            Block::Extern => "an `extern` block",
        }
    }
}

/// The error for a `#[coexec]` attribute (the call site) on `item` inside a block that cannot
/// hold it.
pub fn misplaced(item: &TokenStream) -> Option<syn::Error> {
    let block = block_of_call_site()?;
    // The name after `fn`, read from the tokens: the item may not parse as a declaration.
    let mut tokens =
        item.clone().into_iter().skip_while(|t| !matches!(t, TokenTree::Ident(i) if i == "fn"));
    let name = match tokens.nth(1) {
        Some(TokenTree::Ident(name)) => name.to_string(),
        _ => "saxpy".to_string(),
    };
    // On the attribute, with the hygiene of the user's tokens: the span is the user's mistake,
    // not an item the macro generated.
    let user = item.clone().into_iter().next().map_or_else(Span::call_site, |t| t.span());
    let instead = match block {
        Block::Impl | Block::Trait => format!(
            "Declare it at module level, outside the {}, and call `{name}(&rt, …)` from the \
             method (or keep a `hetdsl::kernel!` struct in a field)",
            if block == Block::Impl { "`impl`" } else { "trait" }
        ),
        Block::Extern => "Declare it at module level, outside the `extern` block: the macro \
                          writes the function's body, it is no foreign function"
            .to_string(),
    };
    Some(syn::Error::new(
        Span::call_site().resolved_at(user),
        format!(
            "`#[coexec]` cannot stand in {}: it declares a function and a module of the same \
             name (`{name}(&rt, global, …)`, `{name}::launch`, …), which only a module can hold. \
             {instead}",
            block.phrase()
        ),
    ))
}

/// The block around the macro's call site, when it is one that cannot hold the declaration and
/// the call site is in a file of the crate.
fn block_of_call_site() -> Option<Block> {
    let at = proc_macro::Span::call_site();
    let file = at.local_file()?;
    let text = std::fs::read_to_string(std::env::current_dir().ok()?.join(file)).ok()?;
    let line_start: usize =
        text.split_inclusive('\n').take(at.line().checked_sub(1)?).map(str::len).sum();
    let line = text.get(line_start..)?.lines().next().unwrap_or("");
    // The column counts characters from 1; the attribute's `#` is there.
    let column: usize = line.chars().take(at.column().saturating_sub(1)).map(char::len_utf8).sum();
    enclosing(&text, line_start + column)
}

/// What an open delimiter of the scanned source is.
struct Frame {
    brace: Option<Kind>,
    /// The words of the item being read directly inside this group, since its last `;` or item.
    header: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Block(Block),
    Other,
}

/// The innermost `{ … }` holding byte `offset` of Rust source `text`, when it is the body of an
/// `impl`, a trait or an `extern` block. Comments, strings and characters are skipped; a group
/// opened by `{` takes its kind from the words before it (`impl<T> S<T> where …`, `pub unsafe
/// trait T`, `extern "C"`), so that a function returning `impl Trait` is not an `impl`.
pub fn enclosing(text: &str, offset: usize) -> Option<Block> {
    let b = text.as_bytes();
    let mut stack = vec![Frame { brace: Some(Kind::Other), header: Vec::new() }];
    let mut i = 0;
    while i < b.len() && i < offset {
        let c = b[i];
        let top = stack.len() - 1;
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(b.len(), |n| i + n);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(b, i);
                continue;
            }
            b'"' => {
                i = skip_string(b, i + 1);
                continue;
            }
            b'\'' => {
                i = skip_char(text, i);
                continue;
            }
            b'{' => {
                let kind = item_kind(&stack[top].header);
                stack[top].header.clear();
                stack.push(Frame { brace: Some(kind), header: Vec::new() });
            }
            b'(' | b'[' => stack.push(Frame { brace: None, header: Vec::new() }),
            b'}' | b')' | b']' => {
                if stack.len() > 1 {
                    stack.pop();
                }
                if c == b'}' {
                    let top = stack.len() - 1;
                    stack[top].header.clear();
                }
            }
            b';' => stack[top].header.clear(),
            c if c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80 => {
                let end = word_end(b, i);
                let word = &text[i..end];
                let raw = matches!(word, "r" | "br" | "cr")
                    && matches!(b.get(end), Some(b'"') | Some(b'#'));
                if raw {
                    i = skip_raw_string(b, end);
                    continue;
                }
                stack[top].header.push(word.to_string());
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    match stack.iter().rev().find_map(|f| f.brace)? {
        Kind::Block(block) => Some(block),
        Kind::Other => None,
    }
}

/// The kind of the group an item's words open: its first word past its qualifiers.
fn item_kind(header: &[String]) -> Kind {
    let first =
        header.iter().find(|w| !matches!(w.as_str(), "pub" | "unsafe" | "default" | "auto"));
    match first.map(String::as_str) {
        Some("impl") => Kind::Block(Block::Impl),
        Some("trait") => Kind::Block(Block::Trait),
        Some("extern") => Kind::Block(Block::Extern),
        _ => Kind::Other,
    }
}

fn word_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric() || b[i] >= 0x80) {
        i += 1;
    }
    i
}

/// Past a `/* … */` comment starting at `i` (nested ones included, as Rust has them).
fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// Past a string whose contents start at `i`, escapes followed.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Past a raw string whose `#`s or opening quote start at `i` (`r#"…"#`).
fn skip_raw_string(b: &[u8], mut i: usize) -> usize {
    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
    i += hashes;
    if b.get(i) != Some(&b'"') {
        return i;
    }
    i += 1;
    while i < b.len() {
        if b[i] == b'"' && b[i + 1..].iter().take(hashes).filter(|&&c| c == b'#').count() == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// Past a character literal at `i` (`'x'`, `'\n'`, `'é'`), or past the quote of a lifetime.
fn skip_char(text: &str, i: usize) -> usize {
    let b = text.as_bytes();
    if b.get(i + 1) == Some(&b'\\') {
        return text.get(i + 3..).and_then(|t| t.find('\'')).map_or(b.len(), |n| i + 3 + n + 1);
    }
    match text[i + 1..].chars().next() {
        Some(c) if b.get(i + 1 + c.len_utf8()) == Some(&b'\'') => i + 2 + c.len_utf8(),
        _ => i + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block around the `@` of `src` (removed before scanning).
    fn around(src: &str) -> Option<Block> {
        let at = src.find('@').unwrap();
        enclosing(&src.replace('@', ""), at)
    }

    #[test]
    fn impls_traits_and_extern_blocks_are_found_around_the_attribute() {
        assert_eq!(around("struct S;\nimpl S {\n    @#[coexec] fn k();\n}"), Some(Block::Impl));
        let generic = "impl<'a, T: Fn() -> u8> Tr<'a> for S<T> where T: Copy { fn a() {} @ }";
        assert_eq!(around(generic), Some(Block::Impl));
        assert_eq!(around("pub unsafe trait T { @ }"), Some(Block::Trait));
        assert_eq!(around("#[cfg(x)] pub(crate) trait T: A + B { @ }"), Some(Block::Trait));
        assert_eq!(around("unsafe extern \"C\" { @ }"), Some(Block::Extern));
    }

    #[test]
    fn modules_and_function_bodies_hold_declarations() {
        assert_eq!(around("@#[coexec] fn k();"), None);
        assert_eq!(around("impl S { fn f() {} }\n@ fn k();"), None);
        assert_eq!(around("mod m { impl S {} @ }"), None);
        assert_eq!(around("impl S { fn f() { @ } }"), None);
        assert_eq!(around("fn f() -> impl Iterator<Item = u8> { @ }"), None);
        assert_eq!(around("const _: () = { @ };"), None);
    }

    #[test]
    fn comments_strings_and_characters_hide_their_braces() {
        let src = "// impl S {\n/* impl /* nested */ T { */ const A: &str = \"impl { \\\" {\";\n\
                   const B: &str = r#\"trait T { \"# ; const C: char = '{'; const D: char = '\\'';\n\
                   fn f<'a>(x: &'a u8) {} @";
        assert_eq!(around(src), None);
        assert_eq!(around("impl S { const C: char = '}'; // }\n @ }"), Some(Block::Impl));
    }
}
