'use strict';
// A client's host connection: a socket on this JS thread to the client's Redis,
// over which core sends the requests of calls made here (src/executor.rs,
// src/host.rs, core's transport/host.rs). Its I/O is the event loop's, as
// ioredis's is: a call costs the network's wake-ups and no thread hop. Core keeps
// its own connection for everything else and for calls while this one is down;
// a socket that closes or stalls fails its requests as lost replies, which core
// settles (read-backs, retries), and a new one is opened after a pause.

const net = require('node:net');

// What the addon's hostFlush() answers (src/host.rs).
const JS_WRITES = 1;
const CLOSE = 2;
const FIRST_RETRY_MS = 100;
// How often overdue replies are looked for (core's response timeout decides what is overdue).
const CHECK_MS = 100;
const LAST_RETRY_MS = 5000;

class HostConnection {
  #native;
  #socket = null;
  #closed = false;
  #retryMs = FIRST_RETRY_MS;
  #timer = null;
  #check;

  constructor(nativeClient) {
    this.#native = nativeClient;
    this.#check = setInterval(() => {
      if (this.#socket !== null) this.#native.hostCheck();
    }, CHECK_MS);
    this.#check.unref();
    this.#open();
  }

  #open() {
    this.#timer = null;
    if (this.#closed || this.#native.closed) return;
    let socket = null;
    // The addon writes requests straight to the socket's file descriptor
    // (src/host.rs) while nothing JS wrote is queued there; otherwise JS writes what
    // it is handed (after a wake), and says when its queue is empty again.
    const drained = () => {
      if (socket === this.#socket && socket.writableLength === 0) this.#native.hostDirect(socket._handle?.fd ?? -1);
    };
    const flush = () => {
      if (socket !== this.#socket) return;
      const status = this.#native.hostFlush();
      if (status === JS_WRITES) socket.write(this.#native.hostLeft(), drained);
      else if (status === CLOSE) socket.destroy(); // a reply is overdue: everything behind it would wait
    };
    const wake = () => process.nextTick(flush);
    const address = this.#native.hostConnect(wake);
    if (!address) return; // TLS, Sentinel or Cluster: core's connection only
    socket = address.path ? net.connect(address.path) : net.connect(address.port, address.host);
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.unref(); // pending calls keep the process alive, not the socket
    socket.on('data', (data) => {
      this.#retryMs = FIRST_RETRY_MS;
      this.#native.hostFeed(data);
    });
    socket.on('error', () => {}); // 'close' follows
    socket.on('close', () => {
      if (socket !== this.#socket) return;
      this.#socket = null;
      this.#native.hostClosed('the socket closed');
      if (this.#closed) return;
      this.#timer = setTimeout(() => this.#open(), this.#retryMs);
      this.#timer.unref();
      this.#retryMs = Math.min(LAST_RETRY_MS, this.#retryMs * 2);
    });
    socket.write(address.handshake, drained);
  }

  /** After the client's close: no new socket, and the current one goes. */
  close() {
    this.#closed = true;
    clearInterval(this.#check);
    if (this.#timer !== null) clearTimeout(this.#timer);
    if (this.#socket !== null) this.#socket.destroy();
  }
}

module.exports = { HostConnection };
