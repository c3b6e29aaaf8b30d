// The microphone as PCM16 blocks of about 20 ms, each with the context frame of its first
// sample: the main thread turns that frame into a capture time on the page's clock.
class DuplexCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.size = Math.max(128, Math.round(sampleRate * 0.02));
    this.block = new Int16Array(this.size);
    this.fill = 0;
    this.first = 0;
    this.running = true;
    this.port.onmessage = (event) => {
      if (event.data === "stop") this.running = false;
    };
  }

  process(inputs) {
    if (!this.running) return false;
    const input = inputs[0] || [];
    const channels = input.length;
    const frames = channels ? input[0].length : 128; // no input yet: silence keeps the clock
    for (let i = 0; i < frames; i++) {
      if (this.fill === 0) this.first = currentFrame + i;
      let v = 0;
      for (let c = 0; c < channels; c++) v += input[c][i];
      if (channels > 1) v /= channels;
      v = v < -1 ? -1 : v > 1 ? 1 : v;
      this.block[this.fill++] = v < 0 ? Math.round(v * 32768) : Math.round(v * 32767);
      if (this.fill === this.size) {
        const pcm = this.block.buffer;
        this.port.postMessage({ frame: this.first, pcm }, [pcm]);
        this.block = new Int16Array(this.size);
        this.fill = 0;
      }
    }
    return true;
  }
}

registerProcessor("duplex-capture", DuplexCapture);
