//! A small W3C WebDriver client over `std::net::TcpStream`, driving Debian's headless
//! Chromium through `chromedriver` (both installed by `.ci/run`). Observed with
//! Chromium and ChromeDriver 148.0.7778.167: `POST /session` with `goog:chromeOptions`,
//! then `/url`, `/title`, `/element` (a reference under the key [`ELEMENT`]),
//! `/element/<ref>/{text,click,value}`, `/execute/{sync,async}`, `/screenshot` (base64
//! PNG), `/window/rect`, `DELETE /session/<id>`; every answer is `{"value": …}`, an
//! error's value holding `error` and `message`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key of an element reference in WebDriver's JSON.
pub const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless Chromium under chromedriver, one session.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    pub version: String,
}

/// Whether the browser and its driver are here (CI has them; elsewhere the test skips
/// with a printed reason).
pub fn available() -> bool {
    super::tool_available("chromedriver", "--version", "chromium-driver")
        && super::tool_available(&chromium(), "--version", "chromium")
}

fn chromium() -> String {
    std::env::var("LIZA_TEST_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

impl Browser {
    /// Starts chromedriver on a free port and opens a session of a headless Chromium
    /// `width` × `height` pixels.
    pub fn start(width: u32, height: u32) -> Browser {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
            version: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(status) = browser.call("GET", "/status", None)
                && status["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not get ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        let binary = which(&chromium());
        let opened = browser
            .call(
                "POST",
                "/session",
                Some(json!({"capabilities": {"alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": binary,
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                 "--disable-dev-shm-usage", "--no-first-run",
                                 format!("--window-size={width},{height}")]
                    }
                }}})),
            )
            .expect("a browser session opens");
        browser.session = opened["sessionId"].as_str().unwrap().to_owned();
        browser.version = opened["capabilities"]["browserVersion"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        browser
    }

    /// One WebDriver call: its `value`, or the error it answered.
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let (status, text) = http(self.port, method, path, body.map(|b| b.to_string()))?;
        let answer: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        let value = answer.get("value").cloned().unwrap_or(Value::Null);
        if status >= 400 {
            return Err(format!(
                "{} {}: {}",
                status, value["error"], value["message"]
            ));
        }
        Ok(value)
    }

    fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    pub fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(json!({ "url": url })))
            .unwrap();
    }

    pub fn title(&self) -> String {
        self.session_call("GET", "/title", None)
            .unwrap()
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    pub fn url(&self) -> String {
        self.session_call("GET", "/url", None)
            .unwrap()
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    /// The first element matching `css`, if there is one.
    pub fn find(&self, css: &str) -> Option<String> {
        self.session_call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        )
        .ok()
        .and_then(|v| v[ELEMENT].as_str().map(str::to_owned))
    }

    /// The rendered text of the first element matching `css` ("" when none). A live page
    /// may replace the element between finding and reading it (a stale reference): it
    /// is found again.
    pub fn text(&self, css: &str) -> String {
        for _ in 0..5 {
            let Some(element) = self.find(css) else {
                return String::new();
            };
            if let Ok(text) = self.session_call("GET", &format!("/element/{element}/text"), None) {
                return text.as_str().unwrap_or("").to_owned();
            }
        }
        String::new()
    }

    pub fn click(&self, css: &str) {
        self.on_element(css, "click", json!({}));
    }

    /// Types `text` into the field `css`.
    pub fn type_into(&self, css: &str, text: &str) {
        self.on_element(css, "value", json!({ "text": text }));
    }

    /// `POST /element/<ref>/<what>` on the element `css`, found again if the live page
    /// replaced it in between.
    fn on_element(&self, css: &str, what: &str, body: Value) {
        let mut last = String::new();
        for _ in 0..5 {
            let element = self
                .find(css)
                .unwrap_or_else(|| panic!("no {css} on the page"));
            match self.session_call(
                "POST",
                &format!("/element/{element}/{what}"),
                Some(body.clone()),
            ) {
                Ok(_) => return,
                Err(e) => last = e,
            }
        }
        panic!("{what} on {css}: {last}");
    }

    /// Presses one key on the page (a WebDriver key action).
    pub fn press(&self, key: &str) {
        self.session_call(
            "POST",
            "/actions",
            Some(
                json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
                    {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}
                ]}]}),
            ),
        )
        .unwrap();
    }

    /// Runs `script` in the page and returns what it returns.
    pub fn execute(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .unwrap()
    }

    /// Runs `script`, which calls its last argument with its result, and waits for it.
    pub fn execute_async(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/async",
            Some(json!({"script": script, "args": []})),
        )
        .unwrap()
    }

    /// Saves what the window shows as a PNG.
    pub fn screenshot(&self, path: &Path) {
        let png = self.session_call("GET", "/screenshot", None).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, base64_decode(png.as_str().unwrap())).unwrap();
    }

    pub fn resize(&self, width: u32, height: u32) {
        self.session_call(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .unwrap();
    }

    /// Waits until `done` holds for the page, for at most `guard`; how long it took.
    pub fn wait_for(
        &self,
        what: &str,
        guard: Duration,
        mut done: impl FnMut(&Browser) -> bool,
    ) -> Duration {
        let started = Instant::now();
        loop {
            if done(self) {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < guard,
                "the page never showed {what} within {guard:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.call("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn which(program: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", "command -v \"$1\"", "sh", program])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// One HTTP/1.1 exchange on loopback `port`: the status and the body (chunked or not).
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<String>,
) -> Result<(u16, String), String> {
    request(
        &format!("127.0.0.1:{port}"),
        method,
        path,
        &[],
        body.as_deref().unwrap_or(""),
    )
    .map(|(status, _, body)| (status, body))
}

/// `method path` on `addr` with `headers`: the status, the head and the body.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<(u16, String, String), String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    if !body.is_empty()
        && !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .map_err(|e| e.to_string())?;
    stream
        .write_all(body.as_bytes())
        .map_err(|e| e.to_string())?;
    // Observed: chromedriver 148 answers `Connection:close` (no space after the colon)
    // and leaves the connection open; the body is read by its length.
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let (head, mut body) = loop {
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        raw.extend_from_slice(&buf[..n]);
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break (
                String::from_utf8_lossy(&raw[..at]).into_owned(),
                raw[at + 4..].to_vec(),
            );
        }
        if n == 0 {
            return Err(format!("no head in {:?}", String::from_utf8_lossy(&raw)));
        }
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    let lower = head.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    loop {
        let complete = match length {
            Some(length) => body.len() >= length,
            None => lower.contains("transfer-encoding: chunked") && body.ends_with(b"0\r\n\r\n"),
        };
        if complete {
            break;
        }
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    let body = if length.is_none() && lower.contains("transfer-encoding: chunked") {
        dechunk(&text)
    } else {
        text
    };
    Ok((status, head, body))
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// Standard base64 (the screenshots' encoding), decoded.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}
