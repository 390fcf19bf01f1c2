//! A raw RESP2/RESP3 client: sends commands as arrays of bulk strings and reads replies into
//! frames that keep their exact wire type, so tests can assert `:1` against `#t`, a null bulk
//! against a RESP3 null, an array against a map.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One reply, as typed on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// `+OK`
    Simple(String),
    /// `-ERR ...` (also RESP3 blob errors)
    Error(String),
    /// `:1`
    Int(i64),
    /// `$3\r\nabc`
    Bulk(Vec<u8>),
    /// `$-1` (RESP2 null bulk)
    NullBulk,
    /// `*-1` (RESP2 null array)
    NullArray,
    /// `_` (RESP3 null)
    Null,
    /// `#t` / `#f`
    Bool(bool),
    /// `,1.5` (kept as text so tests compare exactly)
    Double(String),
    /// `(123` (kept as text)
    BigNumber(String),
    /// `*n`
    Array(Vec<Frame>),
    /// `~n`
    Set(Vec<Frame>),
    /// `%n`, pairs in wire order
    Map(Vec<(Frame, Frame)>),
    /// `>n`
    Push(Vec<Frame>),
}

impl Frame {
    /// A bulk string frame from text.
    pub fn bulk(text: impl AsRef<[u8]>) -> Frame {
        Frame::Bulk(text.as_ref().to_vec())
    }

    /// A simple string frame.
    pub fn simple(text: &str) -> Frame {
        Frame::Simple(text.to_string())
    }

    /// An error frame.
    pub fn error(text: &str) -> Frame {
        Frame::Error(text.to_string())
    }

    /// `+OK`
    pub fn ok() -> Frame {
        Frame::simple("OK")
    }

    /// The bytes of a bulk or simple string; panics otherwise.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Frame::Bulk(bytes) => bytes.clone(),
            Frame::Simple(text) => text.as_bytes().to_vec(),
            other => panic!("not a string: {other:?}"),
        }
    }

    /// The text of a bulk or simple string; panics otherwise.
    pub fn text(&self) -> String {
        String::from_utf8(self.bytes()).expect("utf-8 reply")
    }

    /// The integer; panics otherwise.
    pub fn int(&self) -> i64 {
        match self {
            Frame::Int(value) => *value,
            other => panic!("not an integer: {other:?}"),
        }
    }

    /// The elements of an array (or set, or push); panics otherwise.
    pub fn items(&self) -> Vec<Frame> {
        match self {
            Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => items.clone(),
            other => panic!("not an array: {other:?}"),
        }
    }

    /// True for an error frame.
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }
}

/// A connection speaking raw RESP.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    /// Connects to a server on loopback, and checks the connection with a PING.
    ///
    /// Tests start and kill hundreds of servers on recycled ports, and on loopback Linux reuses
    /// TIME_WAIT port pairs (tcp_tw_reuse=2): now and then a fresh connection is reset before the
    /// server ever sees it (seen here: a live server that logged no "Accepted" and a reset on the
    /// first read). Such a connection is retried; a server that is really down still fails.
    pub fn connect(port: u16) -> std::io::Result<Conn> {
        let mut last = None;
        for _ in 0..5 {
            match Conn::connect_once(port) {
                Ok(conn) => return Ok(conn),
                Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => last = Some(err),
                Err(err) => return Err(err),
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(last.expect("five attempts"))
    }

    fn connect_once(port: u16) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        stream.set_nodelay(true)?;
        let writer = stream.try_clone()?;
        let mut conn = Conn {
            reader: BufReader::new(stream),
            writer,
        };
        // Any reply (PONG, NOAUTH, LOADING) proves a live connection.
        conn.writer.write_all(b"*1\r\n$4\r\nPING\r\n")?;
        conn.read_frame()?;
        Ok(conn)
    }

    /// Sends one command and reads its reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Frame {
        self.send(args);
        self.read()
    }

    /// Sends a command without reading the reply (for pipelining).
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let mut buffer = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            let arg = arg.as_ref();
            buffer.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            buffer.extend_from_slice(arg);
            buffer.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&buffer).expect("write to server");
    }

    /// Reads one reply frame.
    pub fn read(&mut self) -> Frame {
        self.read_frame().expect("read reply")
    }

    /// Sends raw bytes as they are (for malformed-protocol tests).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write to server");
    }

    /// Switches the connection to RESP3 and returns HELLO's reply.
    pub fn resp3(&mut self) -> Frame {
        self.call(&["HELLO", "3"])
    }

    fn line(&mut self) -> std::io::Result<String> {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line)?;
        if line.len() < 2 || !line.ends_with(b"\r\n") {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("bad line {line:?}"),
            ));
        }
        line.truncate(line.len() - 2);
        String::from_utf8(line).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    fn blob(&mut self, len: usize) -> std::io::Result<Vec<u8>> {
        let mut data = vec![0; len + 2];
        self.reader.read_exact(&mut data)?;
        data.truncate(len);
        Ok(data)
    }

    fn frames(&mut self, count: &str) -> std::io::Result<Vec<Frame>> {
        let count: usize = count.parse().expect("count");
        (0..count).map(|_| self.read_frame()).collect()
    }

    fn read_frame(&mut self) -> std::io::Result<Frame> {
        let line = self.line()?;
        let (kind, rest) = line.split_at(1);
        Ok(match kind {
            "+" => Frame::Simple(rest.to_string()),
            "-" => Frame::Error(rest.to_string()),
            ":" => Frame::Int(rest.parse().expect("integer")),
            "$" if rest == "-1" => Frame::NullBulk,
            "$" => Frame::Bulk(self.blob(rest.parse().expect("length"))?),
            "!" => {
                let bytes = self.blob(rest.parse().expect("length"))?;
                Frame::Error(String::from_utf8_lossy(&bytes).into_owned())
            }
            "=" => {
                let bytes = self.blob(rest.parse().expect("length"))?;
                Frame::Bulk(bytes[4..].to_vec())
            }
            "*" if rest == "-1" => Frame::NullArray,
            "*" => Frame::Array(self.frames(rest)?),
            "~" => Frame::Set(self.frames(rest)?),
            ">" => Frame::Push(self.frames(rest)?),
            "%" => {
                let count: usize = rest.parse().expect("count");
                let mut pairs = Vec::with_capacity(count);
                for _ in 0..count {
                    let key = self.read_frame()?;
                    let value = self.read_frame()?;
                    pairs.push((key, value));
                }
                Frame::Map(pairs)
            }
            "_" => Frame::Null,
            "#" => Frame::Bool(rest == "t"),
            "," => Frame::Double(rest.to_string()),
            "(" => Frame::BigNumber(rest.to_string()),
            "|" => {
                // An attribute precedes the real reply: skip it.
                let count: usize = rest.parse().expect("count");
                for _ in 0..count * 2 {
                    self.read_frame()?;
                }
                self.read_frame()?
            }
            other => panic!("unknown reply type {other:?} in {line:?}"),
        })
    }
}
