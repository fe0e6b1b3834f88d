//! One request: a connection (new, or a client's kept-alive one), the request, the response
//! read to its last byte. The connection's reads are stamped, so the time to first byte is
//! when the first response byte arrived, not when hyper had parsed the whole head.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderValue, CONNECTION, HOST, USER_AGENT};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

use crate::ErrorKind;

const AGENT: &str = concat!("iowatt/", env!("CARGO_PKG_VERSION"));

/// Where a request's connection goes: the server's address and, for https, the TLS client
/// and the name the certificate must carry.
pub(crate) struct Dial {
    pub addr: std::net::SocketAddr,
    pub tls: Option<(TlsConnector, ServerName<'static>)>,
}

/// A stream (TCP, or TLS over it) that notes (CLOCK_MONOTONIC ns) when a read first returns
/// bytes after the stamp was reset to 0.
struct Stamped<S> {
    stream: S,
    first_read: Arc<AtomicU64>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Stamped<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before && self.first_read.load(Relaxed) == 0 {
            self.first_read.store(iowatt_metrics::now_ns(), Relaxed);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Stamped<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

pub(crate) struct Conn {
    sender: SendRequest<Empty<Bytes>>,
    first_read: Arc<AtomicU64>,
}

/// Kept-alive connections waiting for their client's next request, at most `cap` in all.
pub(crate) struct Pool {
    idle: Mutex<Idle>,
    cap: usize,
}

#[derive(Default)]
struct Idle {
    by_client: HashMap<u32, Vec<Conn>>,
    count: usize,
}

impl Pool {
    pub fn new(cap: usize) -> Self {
        Self {
            idle: Mutex::new(Idle::default()),
            cap,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, client: u32) -> Option<Conn> {
        let mut idle = self.lock();
        let Idle { by_client, count } = &mut *idle;
        let conns = by_client.get_mut(&client)?;
        while let Some(c) = conns.pop() {
            *count -= 1;
            if !c.sender.is_closed() && c.sender.is_ready() {
                return Some(c);
            }
        }
        None
    }

    fn put(&self, client: u32, conn: Conn) {
        let mut idle = self.lock();
        if idle.count >= self.cap || conn.sender.is_closed() {
            return;
        }
        idle.count += 1;
        idle.by_client.entry(client).or_default().push(conn);
    }
}

/// What one request is sent with.
pub(crate) struct Ask<'a> {
    pub method: &'a Method,
    pub uri: Uri,
    pub host: &'a HeaderValue,
    pub client: u32,
}

/// How far a request got: times are CLOCK_MONOTONIC ns, 0 when not reached.
#[derive(Default)]
pub(crate) struct Reached {
    pub connected: u64,
    pub first_byte: u64,
    pub status: u16,
    pub bytes: u64,
}

/// Sends `ask` and reads the response to its end, noting progress in `reached` as it goes (so
/// a timeout or error keeps what was reached).
pub(crate) async fn exchange(
    dial: &Dial,
    pool: Option<&Pool>,
    ask: Ask<'_>,
    reached: &mut Reached,
) -> Result<(), ErrorKind> {
    let reused = pool.and_then(|p| p.take(ask.client));
    let mut conn = match reused {
        Some(c) => c,
        None => {
            let c = connect(dial).await?;
            reached.connected = iowatt_metrics::now_ns();
            c
        }
    };
    let mut req = Request::builder()
        .method(ask.method.clone())
        .uri(ask.uri)
        .body(Empty::<Bytes>::new())
        .map_err(|_| ErrorKind::Protocol)?;
    let headers = req.headers_mut();
    headers.insert(HOST, ask.host.clone());
    headers.insert(USER_AGENT, HeaderValue::from_static(AGENT));
    if pool.is_none() {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    conn.first_read.store(0, Relaxed);
    let response = conn
        .sender
        .send_request(req)
        .await
        .map_err(|e| classify(&e))?;
    reached.status = response.status().as_u16();
    reached.first_byte = conn.first_read.load(Relaxed);
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| classify(&e))?;
        if let Some(data) = frame.data_ref() {
            reached.bytes += data.len() as u64;
        }
    }
    if let Some(pool) = pool {
        // A connection that fails to become ready is closed, and `put` drops it.
        let _ = conn.sender.ready().await;
        pool.put(ask.client, conn);
    }
    Ok(())
}

async fn connect(dial: &Dial) -> Result<Conn, ErrorKind> {
    let stream = TcpStream::connect(dial.addr)
        .await
        .map_err(|e| match e.kind() {
            io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
            _ => ErrorKind::Connect,
        })?;
    stream.set_nodelay(true).map_err(|_| ErrorKind::Connect)?;
    match &dial.tls {
        None => handshake(stream).await,
        Some((connector, name)) => {
            let tls = connector
                .connect(name.clone(), stream)
                .await
                .map_err(|_| ErrorKind::Tls)?;
            handshake(tls).await
        }
    }
}

/// HTTP/1.1 over `stream`, its reads stamped; the connection is driven by a task of its own.
async fn handshake<S>(stream: S) -> Result<Conn, ErrorKind>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let first_read = Arc::new(AtomicU64::new(0));
    let io = TokioIo::new(Stamped {
        stream,
        first_read: first_read.clone(),
    });
    let (sender, connection) = http1::handshake(io).await.map_err(|e| classify(&e))?;
    tokio::spawn(async move {
        // Its errors reach the request through send_request and the body.
        let _ = connection.await;
    });
    Ok(Conn { sender, first_read })
}

fn classify(e: &hyper::Error) -> ErrorKind {
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        return ErrorKind::Reset;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return match io.kind() {
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
                _ => ErrorKind::Protocol,
            };
        }
        source = s.source();
    }
    ErrorKind::Protocol
}

/// The request's URI: `prefix` + the log's target, with bytes a URI may not hold
/// percent-encoded (logs keep what clients sent, spaces and all). An absolute-form target
/// (`http://host/path`) keeps only its path.
pub(crate) fn request_uri(prefix: &str, target: &[u8]) -> Option<Uri> {
    let mut path = target;
    for scheme in [&b"http://"[..], b"https://"] {
        if path.len() >= scheme.len() && path[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &path[scheme.len()..];
            path = rest
                .iter()
                .position(|&b| b == b'/')
                .map_or(b"/", |i| &rest[i..]);
        }
    }
    let mut text = String::with_capacity(prefix.len() + path.len() + 1);
    text.push_str(prefix);
    if path.first() != Some(&b'/') {
        text.push('/');
    }
    for &b in path {
        if b.is_ascii_graphic() && !b"\"<>\\^`{|}".contains(&b) {
            text.push(b as char);
        } else {
            text.push_str(&format!("%{b:02X}"));
        }
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_become_origin_form_uris() {
        let uri = |p: &str, t: &[u8]| request_uri(p, t).map(|u| u.to_string());
        assert_eq!(uri("", b"/a/b.html?x=1").as_deref(), Some("/a/b.html?x=1"));
        assert_eq!(uri("/site", b"/a b\"c").as_deref(), Some("/site/a%20b%22c"));
        assert_eq!(uri("", b"http://example.org/x").as_deref(), Some("/x"));
        assert_eq!(uri("", b"HTTP://example.org").as_deref(), Some("/"));
        assert_eq!(uri("", b"caf\xc3\xa9").as_deref(), Some("/caf%C3%A9"));
        assert_eq!(uri("", b"*").as_deref(), Some("/*"));
    }
}
