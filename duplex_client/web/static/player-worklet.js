// The answers' player: one queue per response, played in arrival order after a small
// jitter buffer, short fades at starts, resumptions and cuts, an underrun counter, and a
// report of every block handed to the output: [response, offset, samples, first frame].
const FADE_S = 0.005;
const REPORT_S = 0.02;

class DuplexPlayer extends AudioWorkletProcessor {
  constructor() {
    super();
    this.jitter = Math.round(sampleRate * 0.08);
    this.fade = Math.max(1, Math.round(sampleRate * FADE_S));
    this.tracks = new Map();
    this.order = [];
    this.underruns = 0;
    this.dry = false;
    this.pending = null; // the block being reported: {n, offset, count, frame}
    this.reports = [];
    this.port.onmessage = (event) => this.command(event.data);
  }

  command(msg) {
    if (msg.type === "config") {
      this.jitter = Math.round((sampleRate * msg.jitter_ms) / 1000);
    } else if (msg.type === "play") {
      this.track(msg.n);
    } else if (msg.type === "audio") {
      const t = this.track(msg.n);
      if (!t.cleared) {
        t.chunks.push(new Int16Array(msg.pcm));
        t.queued += msg.pcm.byteLength / 2;
      }
    } else if (msg.type === "end") {
      this.track(msg.n).ended = true;
    } else if (msg.type === "clear") {
      this.cut(msg.n);
    } else if (msg.type === "stop") {
      for (const n of [...this.order]) this.cut(n, true);
    }
  }

  track(n) {
    let t = this.tracks.get(n);
    if (!t) {
      t = { n, chunks: [], head: 0, queued: 0, offset: 0, ended: false, started: false,
            cleared: false, fadeIn: 0, fadeOut: -1 };
      this.tracks.set(n, t);
      this.order.push(n);
    }
    return t;
  }

  cut(n, now = false) {
    const t = this.track(n);
    if (t.cleared) return;
    t.cleared = true;
    if (t.started && t.queued > 0 && !now && this.order[0] === n) {
      t.fadeOut = Math.min(this.fade, t.queued); // fade out what plays next, then stop
    } else {
      this.finish(t);
    }
  }

  finish(t) {
    this.flush();
    t.chunks = [];
    t.queued = 0;
    this.order = this.order.filter((n) => n !== t.n);
    if (t.cleared) this.port.postMessage({ cleared: t.n, played: t.offset });
  }

  take(t, out, at, count) {
    let done = 0;
    while (done < count) {
      const chunk = t.chunks[0];
      const n = Math.min(count - done, chunk.length - t.head);
      for (let i = 0; i < n; i++) {
        let gain = 1;
        if (t.fadeIn > 0) { gain = 1 - t.fadeIn / this.fade; t.fadeIn--; }
        if (t.fadeOut >= 0) { gain *= t.fadeOut / this.fade; t.fadeOut--; }
        out[at + done + i] = (chunk[t.head + i] / 32768) * gain;
      }
      t.head += n;
      done += n;
      if (t.head === chunk.length) { t.chunks.shift(); t.head = 0; }
    }
  }

  note(t, frame, count) {
    const p = this.pending;
    if (p && p.n === t.n && p.offset + p.count === t.offset && p.frame + p.count === frame) {
      p.count += count;
    } else {
      this.flush();
      this.pending = { n: t.n, offset: t.offset, count, frame };
    }
  }

  flush() {
    const p = this.pending;
    if (p) this.reports.push([p.n, p.offset, p.count, p.frame]);
    this.pending = null;
    if (this.reports.length) {
      this.port.postMessage({ blocks: this.reports, underruns: this.underruns });
      this.reports = [];
    }
  }

  process(inputs, outputs) {
    const out = outputs[0][0];
    out.fill(0);
    let i = 0;
    while (i < out.length && this.order.length) {
      const t = this.tracks.get(this.order[0]);
      if (!t.started) {
        if (t.queued < this.jitter && !t.ended) break;
        if (t.queued === 0) { this.finish(t); continue; }
        t.started = true;
        t.fadeIn = this.fade;
      }
      if (t.queued === 0) {
        if (t.ended || t.cleared) { this.finish(t); continue; }
        if (!this.dry) { this.underruns++; this.dry = true; t.fadeIn = this.fade; }
        break;
      }
      this.dry = false;
      let count = Math.min(out.length - i, t.queued);
      if (t.fadeOut >= 0) count = Math.min(count, t.fadeOut + 1);
      this.note(t, currentFrame + i, count);
      this.take(t, out, i, count);
      t.offset += count;
      t.queued -= count;
      i += count;
      if (t.cleared && t.fadeOut < 0) this.finish(t);
    }
    const p = this.pending;
    if (p && (currentFrame + out.length - p.frame) / sampleRate >= REPORT_S) this.flush();
    return true;
  }
}

registerProcessor("duplex-player", DuplexPlayer);
