// The page's media: the microphone (capture worklet) and the answers (player worklet), each
// in an AudioContext at the session's rate, the camera's frames, and the audio clocks
// mapped to the page's clock.
export const AUDIO = 1, FRAME = 2, ANSWER = 3;

// A context's clock on the page's clock. getOutputTimestamp() says when the output plays
// which context time; its readings jitter by a few ms, so the median of the recent ones is
// used, and moved only when it drifts by more than 2 ms: consecutive frames keep
// consecutive times. Readings are taken every 50 ms from the start, so the first capture
// block already has a settled offset.
class ContextClock {
  constructor(context) {
    this.context = context;
    this.readings = [];
    this.anchor = undefined;
    this.timer = setInterval(() => this.offsetMs(), 50);
  }

  // When the output plays context frame `frame`, on the page's clock (ms).
  outputMs(frame) {
    return (frame / this.context.sampleRate) * 1000 + this.offsetMs();
  }

  offsetMs() {
    const ctx = this.context;
    const ts = ctx.getOutputTimestamp();
    if (ts.performanceTime) {
      this.readings.push(ts.performanceTime - ts.contextTime * 1000);
      if (this.readings.length > 31) this.readings.shift();
    }
    if (!this.readings.length) {
      // no output yet: the graph runs about its output latency ahead of the speaker
      const ahead = (ctx.baseLatency || 0) + (ctx.outputLatency || 0);
      return performance.now() - ctx.currentTime * 1000 + ahead * 1000;
    }
    const median = [...this.readings].sort((a, b) => a - b)[this.readings.length >> 1];
    if (this.anchor === undefined || Math.abs(median - this.anchor) > 2) this.anchor = median;
    return this.anchor;
  }

  close() {
    clearInterval(this.timer);
  }
}

// The microphone at the session's input rate (the browser resamples the track into the
// context, so this process never has to) and the answers at the session's output rate:
// two AudioContexts, each with a worklet. The player asks for the smallest buffers the
// device has (`latencyHint: 0`: 21 ms of output latency in Chromium against 43 ms for
// "interactive"); capture keeps "interactive", whose larger buffers held its tail lower
// on a busy machine (benchmarks/README.md).
export class AudioPath {
  constructor(inputRate, outputRate) {
    this.input = new AudioContext({ sampleRate: inputRate, latencyHint: "interactive" });
    this.output = new AudioContext({ sampleRate: outputRate, latencyHint: 0 });
    this.inputClock = new ContextClock(this.input);
    this.outputClock = new ContextClock(this.output);
    this.capturing = false;
    this.base = null; // the context frame of the first block sent
    this.inputLatencyS = 0;
    this.onBlock = null; // (startSample, capturedMs, pcm ArrayBuffer) while capturing
    this.onPlayed = null; // ({blocks, underruns}) with page times
    this.onCleared = null; // (n)
  }

  get captureRate() {
    return this.input.sampleRate;
  }

  async open(stream) {
    await this.output.audioWorklet.addModule("/static/player-worklet.js");
    this.player = new AudioWorkletNode(this.output, "duplex-player", { outputChannelCount: [1] });
    this.player.connect(this.output.destination);
    this.player.port.onmessage = (event) => this.played(event.data);
    if (stream && stream.getAudioTracks().length) {
      const track = stream.getAudioTracks()[0];
      const latency = track.getSettings().latency;
      this.inputLatencyS = typeof latency === "number" ? latency : 0;
      await this.input.audioWorklet.addModule("/static/capture-worklet.js");
      this.source = this.input.createMediaStreamSource(stream);
      this.capture = new AudioWorkletNode(this.input, "duplex-capture", { numberOfOutputs: 0 });
      this.capture.port.onmessage = (event) => this.block(event.data);
      this.source.connect(this.capture);
    }
    for (const ctx of [this.input, this.output]) if (ctx.state !== "running") await ctx.resume();
  }

  // When the microphone captured the sample the capture graph took at `frame` (ms): it
  // reached the graph an input latency after capture, and the graph runs an output latency
  // ahead of its (silent) output.
  capturedMs(frame) {
    const ctx = this.input;
    const ahead = (ctx.baseLatency || 0) + (ctx.outputLatency || 0);
    return this.inputClock.outputMs(frame) - (ahead + this.inputLatencyS) * 1000;
  }

  block({ frame, pcm }) {
    if (!this.capturing || !this.onBlock) return;
    if (this.base === null) this.base = frame;
    this.onBlock(frame - this.base, this.capturedMs(frame), pcm);
  }

  played(msg) {
    if (msg.cleared !== undefined) {
      if (this.onCleared) this.onCleared(msg.cleared);
      return;
    }
    const at = (frame) => this.outputClock.outputMs(frame);
    const blocks = msg.blocks.map(([n, offset, count, frame]) => [n, offset, count, at(frame), frame]);
    if (this.onPlayed) this.onPlayed({ blocks, underruns: msg.underruns });
  }

  send(msg, transfer) {
    this.player.port.postMessage(msg, transfer || []);
  }

  close() {
    this.capturing = false;
    if (this.capture) this.capture.port.postMessage("stop");
    this.inputClock.close();
    this.outputClock.close();
    this.input.close().catch(() => {});
    this.output.close().catch(() => {});
  }
}

// Camera frames: the latest picture of the stream every `periodMs`, scaled so its longest
// side is at most `maxSide`, JPEG-encoded at `quality` (1-100).
export class FrameGrabber {
  constructor(video, onFrame) {
    this.video = video;
    this.onFrame = onFrame;
    this.canvas = document.createElement("canvas");
    this.timer = null;
    this.seq = 0;
  }

  start({ period_ms, max_side, quality }) {
    this.stop();
    this.quality = Math.max(1, Math.min(100, quality)) / 100;
    this.maxSide = max_side;
    const first = performance.now();
    let k = 0;
    const tick = () => {
      this.grab();
      k += 1;
      this.timer = setTimeout(tick, Math.max(0, first + k * period_ms - performance.now()));
    };
    this.timer = 0;
    tick();
  }

  grab() {
    const v = this.video;
    if (!v.videoWidth || !v.videoHeight) return;
    const scale = this.maxSide > 0 ? Math.min(1, this.maxSide / Math.max(v.videoWidth, v.videoHeight)) : 1;
    const w = Math.max(1, Math.round(v.videoWidth * scale));
    const h = Math.max(1, Math.round(v.videoHeight * scale));
    this.canvas.width = w;
    this.canvas.height = h;
    const at = performance.now();
    this.canvas.getContext("2d").drawImage(v, 0, 0, w, h);
    const seq = ++this.seq;
    this.canvas.toBlob((blob) => {
      if (blob && this.timer !== null) blob.arrayBuffer().then((jpeg) => this.onFrame(seq, at, w, h, jpeg));
    }, "image/jpeg", this.quality);
  }

  stop() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

export function audioMessage(startSample, capturedMs, pcm) {
  const out = new Uint8Array(16 + pcm.byteLength);
  const view = new DataView(out.buffer);
  view.setUint8(0, AUDIO);
  view.setUint32(4, startSample >>> 0, true);
  view.setFloat64(8, capturedMs, true);
  out.set(new Uint8Array(pcm), 16);
  return out.buffer;
}

export function frameMessage(seq, capturedMs, width, height, jpeg) {
  const out = new Uint8Array(18 + jpeg.byteLength);
  const view = new DataView(out.buffer);
  view.setUint8(0, FRAME);
  view.setUint16(2, width, true);
  view.setUint16(4, height, true);
  view.setUint32(6, seq >>> 0, true);
  view.setFloat64(10, capturedMs, true);
  out.set(new Uint8Array(jpeg), 18);
  return out.buffer;
}
