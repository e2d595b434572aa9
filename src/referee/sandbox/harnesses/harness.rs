
// ---- Referee's function-test harness for Rust (referee/sandbox/typed_harness.py appends it) ----
// One `function` test: the spec {"fn_name", "args"} arrives on fd 3; each JSON argument is
// converted to the parameter's type (written in the generated call below: the host reads the
// function's signature, and the traits here do the conversion), the function is called, and
// its value goes to fd 4 as {"ok": true, "value": ...} ({"ok": false, "error"} when an argument
// does not fit or the value is no JSON value). A panic is uncaught: runtime_error.
#[allow(dead_code)]
mod referee_harness {
    use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
    use std::io::{Read, Write};
    use std::os::unix::io::FromRawFd;

    #[derive(Debug, Clone)]
    pub enum Json {
        Null,
        Bool(bool),
        Number(String),
        Str(String),
        Array(Vec<Json>),
        Object(Vec<(String, Json)>),
    }

    pub type Fit<T> = Result<T, String>;

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl<'a> Parser<'a> {
        fn skip(&mut self) {
            while self.i < self.s.len() && (self.s[self.i] as char).is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn peek(&self) -> Fit<u8> {
            self.s.get(self.i).copied().ok_or_else(|| "the spec ended early".to_string())
        }
        fn hex4(&mut self) -> Fit<u32> {
            let text = std::str::from_utf8(self.s.get(self.i..self.i + 4).ok_or("bad \\u escape")?)
                .map_err(|_| "bad \\u escape")?;
            self.i += 4;
            u32::from_str_radix(text, 16).map_err(|_| "bad \\u escape".to_string())
        }
        fn string(&mut self) -> Fit<String> {
            self.i += 1;
            let mut out: Vec<u8> = Vec::new();
            loop {
                let c = self.peek()?;
                self.i += 1;
                match c {
                    b'"' => break,
                    b'\\' => {
                        let e = self.peek()?;
                        self.i += 1;
                        match e {
                            b'n' => out.push(b'\n'),
                            b't' => out.push(b'\t'),
                            b'r' => out.push(b'\r'),
                            b'b' => out.push(8),
                            b'f' => out.push(12),
                            b'u' => {
                                let mut cp = self.hex4()?;
                                if (0xD800..0xDC00).contains(&cp) && self.s.get(self.i..self.i + 2) == Some(b"\\u") {
                                    self.i += 2;
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (self.hex4()? - 0xDC00);
                                }
                                let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                                let mut buf = [0u8; 4];
                                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                            }
                            other => out.push(other),
                        }
                    }
                    other => out.push(other),
                }
            }
            String::from_utf8(out).map_err(|_| "a string is not UTF-8".to_string())
        }
        fn value(&mut self, depth: usize) -> Fit<Json> {
            if depth > 200 {
                return Err("the spec is nested too deeply".into());
            }
            self.skip();
            match self.peek()? {
                b'{' => {
                    self.i += 1;
                    let mut fields = Vec::new();
                    self.skip();
                    if self.peek()? == b'}' {
                        self.i += 1;
                        return Ok(Json::Object(fields));
                    }
                    loop {
                        self.skip();
                        let key = self.string()?;
                        self.skip();
                        self.i += 1; // ':'
                        fields.push((key, self.value(depth + 1)?));
                        self.skip();
                        let c = self.peek()?;
                        self.i += 1;
                        if c == b'}' {
                            return Ok(Json::Object(fields));
                        }
                    }
                }
                b'[' => {
                    self.i += 1;
                    let mut items = Vec::new();
                    self.skip();
                    if self.peek()? == b']' {
                        self.i += 1;
                        return Ok(Json::Array(items));
                    }
                    loop {
                        items.push(self.value(depth + 1)?);
                        self.skip();
                        let c = self.peek()?;
                        self.i += 1;
                        if c == b']' {
                            return Ok(Json::Array(items));
                        }
                    }
                }
                b'"' => Ok(Json::Str(self.string()?)),
                _ => {
                    for (word, value) in [("true", Json::Bool(true)), ("false", Json::Bool(false)), ("null", Json::Null)] {
                        if self.s[self.i..].starts_with(word.as_bytes()) {
                            self.i += word.len();
                            return Ok(value);
                        }
                    }
                    let start = self.i;
                    while self.i < self.s.len() && b"+-0123456789.eE".contains(&self.s[self.i]) {
                        self.i += 1;
                    }
                    Ok(Json::Number(String::from_utf8_lossy(&self.s[start..self.i]).into_owned()))
                }
            }
        }
    }

    // ---- JSON -> the parameter's type ------------------------------------------------------
    pub trait FromJson: Sized {
        fn from_json(j: &Json) -> Fit<Self>;
    }

    macro_rules! integers {
        ($($t:ty),*) => {$(
            impl FromJson for $t {
                fn from_json(j: &Json) -> Fit<Self> {
                    match j {
                        Json::Number(text) if !text.contains(['.', 'e', 'E']) => text
                            .parse::<$t>()
                            .map_err(|_| "an integer out of the parameter's range".to_string()),
                        _ => Err("expected an integer".into()),
                    }
                }
            }
        )*};
    }
    integers!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

    macro_rules! floats {
        ($($t:ty),*) => {$(
            impl FromJson for $t {
                fn from_json(j: &Json) -> Fit<Self> {
                    match j {
                        Json::Number(text) => text.parse::<$t>().map_err(|_| "expected a number".to_string()),
                        _ => Err("expected a number".into()),
                    }
                }
            }
        )*};
    }
    floats!(f32, f64);

    impl FromJson for bool {
        fn from_json(j: &Json) -> Fit<Self> {
            match j {
                Json::Bool(b) => Ok(*b),
                _ => Err("expected a boolean".into()),
            }
        }
    }
    impl FromJson for String {
        fn from_json(j: &Json) -> Fit<Self> {
            match j {
                Json::Str(s) => Ok(s.clone()),
                _ => Err("expected a string".into()),
            }
        }
    }
    impl FromJson for char {
        fn from_json(j: &Json) -> Fit<Self> {
            match j {
                Json::Str(s) if s.chars().count() == 1 => Ok(s.chars().next().unwrap()),
                _ => Err("expected a one-character string".into()),
            }
        }
    }
    impl<T: FromJson> FromJson for Option<T> {
        fn from_json(j: &Json) -> Fit<Self> {
            match j {
                Json::Null => Ok(None),
                other => T::from_json(other).map(Some),
            }
        }
    }
    fn items(j: &Json) -> Fit<&Vec<Json>> {
        match j {
            Json::Array(items) => Ok(items),
            _ => Err("expected an array".into()),
        }
    }
    impl<T: FromJson> FromJson for Vec<T> {
        fn from_json(j: &Json) -> Fit<Self> {
            items(j)?.iter().map(T::from_json).collect()
        }
    }
    impl<T: FromJson> FromJson for VecDeque<T> {
        fn from_json(j: &Json) -> Fit<Self> {
            items(j)?.iter().map(T::from_json).collect()
        }
    }
    impl<T: FromJson + Ord> FromJson for BTreeSet<T> {
        fn from_json(j: &Json) -> Fit<Self> {
            items(j)?.iter().map(T::from_json).collect()
        }
    }
    impl<T: FromJson + Eq + std::hash::Hash> FromJson for HashSet<T> {
        fn from_json(j: &Json) -> Fit<Self> {
            items(j)?.iter().map(T::from_json).collect()
        }
    }
    impl<T: FromJson, const N: usize> FromJson for [T; N] {
        fn from_json(j: &Json) -> Fit<Self> {
            let v: Vec<T> = Vec::from_json(j)?;
            v.try_into().map_err(|_| "expected an array of the array's size".to_string())
        }
    }
    // JSON object keys are strings: "3" -> 3 for integer-keyed maps.
    fn key<K: FromJson>(k: &str) -> Fit<K> {
        K::from_json(&Json::Str(k.to_string())).or_else(|_| K::from_json(&Json::Number(k.to_string())))
    }
    fn fields(j: &Json) -> Fit<&Vec<(String, Json)>> {
        match j {
            Json::Object(fields) => Ok(fields),
            _ => Err("expected an object".into()),
        }
    }
    impl<K: FromJson + Eq + std::hash::Hash, V: FromJson> FromJson for HashMap<K, V> {
        fn from_json(j: &Json) -> Fit<Self> {
            fields(j)?.iter().map(|(k, v)| Ok((key(k)?, V::from_json(v)?))).collect()
        }
    }
    impl<K: FromJson + Ord, V: FromJson> FromJson for BTreeMap<K, V> {
        fn from_json(j: &Json) -> Fit<Self> {
            fields(j)?.iter().map(|(k, v)| Ok((key(k)?, V::from_json(v)?))).collect()
        }
    }
    macro_rules! tuples {
        ($(($n:expr; $($t:ident $i:tt),+)),*) => {$(
            impl<$($t: FromJson),+> FromJson for ($($t,)+) {
                fn from_json(j: &Json) -> Fit<Self> {
                    let items = items(j)?;
                    if items.len() != $n {
                        return Err("expected a tuple's array".into());
                    }
                    Ok(($($t::from_json(&items[$i])?,)+))
                }
            }
        )*};
    }
    tuples!((1; A 0), (2; A 0, B 1), (3; A 0, B 1, C 2), (4; A 0, B 1, C 2, D 3));

    // ---- the function's value -> JSON ------------------------------------------------------
    pub trait ToJson {
        fn to_json(&self, out: &mut String) -> Fit<()>;
    }
    macro_rules! plain_numbers {
        ($($t:ty),*) => {$(
            impl ToJson for $t {
                fn to_json(&self, out: &mut String) -> Fit<()> {
                    out.push_str(&self.to_string());
                    Ok(())
                }
            }
        )*};
    }
    plain_numbers!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool);
    macro_rules! float_numbers {
        ($($t:ty),*) => {$(
            impl ToJson for $t {
                fn to_json(&self, out: &mut String) -> Fit<()> {
                    if !self.is_finite() {
                        return Err("a NaN or infinite float is not a JSON value".into());
                    }
                    out.push_str(&format!("{:?}", self));
                    Ok(())
                }
            }
        )*};
    }
    float_numbers!(f32, f64);
    pub fn put_str(s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    impl ToJson for String {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            put_str(self, out);
            Ok(())
        }
    }
    impl ToJson for &str {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            put_str(self, out);
            Ok(())
        }
    }
    impl ToJson for char {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            put_str(&self.to_string(), out);
            Ok(())
        }
    }
    impl ToJson for () {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            out.push_str("null");
            Ok(())
        }
    }
    impl<T: ToJson> ToJson for Option<T> {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            match self {
                None => {
                    out.push_str("null");
                    Ok(())
                }
                Some(v) => v.to_json(out),
            }
        }
    }
    impl<T: ToJson> ToJson for Box<T> {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            (**self).to_json(out)
        }
    }
    fn list<'a, T: ToJson + 'a>(items: impl Iterator<Item = &'a T>, out: &mut String) -> Fit<()> {
        out.push('[');
        for (k, item) in items.enumerate() {
            if k > 0 {
                out.push(',');
            }
            item.to_json(out)?;
        }
        out.push(']');
        Ok(())
    }
    impl<T: ToJson> ToJson for Vec<T> {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            list(self.iter(), out)
        }
    }
    impl<T: ToJson> ToJson for VecDeque<T> {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            list(self.iter(), out)
        }
    }
    impl<T: ToJson> ToJson for BTreeSet<T> {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            list(self.iter(), out)
        }
    }
    impl<T: ToJson> ToJson for HashSet<T> {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            list(self.iter(), out)
        }
    }
    impl<T: ToJson, const N: usize> ToJson for [T; N] {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            list(self.iter(), out)
        }
    }
    fn object<'a, K: ToString + 'a, V: ToJson + 'a>(
        entries: impl Iterator<Item = (&'a K, &'a V)>,
        out: &mut String,
    ) -> Fit<()> {
        out.push('{');
        for (k, (key, value)) in entries.enumerate() {
            if k > 0 {
                out.push(',');
            }
            put_str(&key.to_string(), out);
            out.push(':');
            value.to_json(out)?;
        }
        out.push('}');
        Ok(())
    }
    impl<K: ToString, V: ToJson> ToJson for HashMap<K, V> {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            object(self.iter(), out)
        }
    }
    impl<K: ToString, V: ToJson> ToJson for BTreeMap<K, V> {
        fn to_json(&self, out: &mut String) -> Fit<()> {
            object(self.iter(), out)
        }
    }
    macro_rules! tuples_out {
        ($(($($t:ident $i:tt),+)),*) => {$(
            impl<$($t: ToJson),+> ToJson for ($($t,)+) {
                fn to_json(&self, out: &mut String) -> Fit<()> {
                    out.push('[');
                    $(
                        if $i > 0 {
                            out.push(',');
                        }
                        self.$i.to_json(out)?;
                    )+
                    out.push(']');
                    Ok(())
                }
            }
        )*};
    }
    tuples_out!((A 0), (A 0, B 1), (A 0, B 1, C 2), (A 0, B 1, C 2, D 3));

    // ---- the call -------------------------------------------------------------------------
    pub fn arg<T: FromJson>(args: &[Json], index: usize) -> Fit<T> {
        let value = args.get(index).ok_or_else(|| format!("the test passes {} arguments; the function takes more", args.len()))?;
        T::from_json(value).map_err(|why| format!("argument {}: {}", index + 1, why))
    }

    pub fn value<T: ToJson>(result: T) -> Fit<String> {
        let mut out = String::from("{\"ok\":true,\"value\":");
        result.to_json(&mut out)?;
        out.push('}');
        Ok(out)
    }

    pub fn run(dispatch: fn(&str, &[Json]) -> Fit<String>) {
        let mut data = Vec::new();
        let mut spec_file = unsafe { std::fs::File::from_raw_fd(3) };
        spec_file.read_to_end(&mut data).expect("the spec");
        drop(spec_file);
        let spec = Parser { s: &data, i: 0 }.value(0).expect("the spec is JSON");
        let (mut name, mut args) = (String::new(), Vec::new());
        if let Json::Object(fields) = spec {
            for (k, v) in fields {
                match (k.as_str(), v) {
                    ("fn_name", Json::Str(s)) => name = s,
                    ("args", Json::Array(a)) => args = a,
                    _ => {}
                }
            }
        }
        let payload = match dispatch(&name, &args) {
            Ok(payload) => payload,
            Err(why) => {
                let mut out = String::from("{\"ok\":false,\"error\":");
                put_str(&why, &mut out);
                out.push('}');
                out
            }
        };
        let _ = std::io::stdout().flush();
        let mut result = unsafe { std::fs::File::from_raw_fd(4) };
        result.write_all(payload.as_bytes()).expect("the result");
    }
}
