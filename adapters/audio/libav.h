// Decoding to 16 kHz mono float32 through libavformat, libavcodec and
// libswresample, as `ffmpeg -map a:0 -ac 1 -ar 16000 -rematrix_maxval 1
// -f f32le` does (libav.go).
#ifndef NOMARR_LIBAV_H
#define NOMARR_LIBAV_H

#include <stdint.h>

typedef struct nm_dec nm_dec;

// Stages at which nm_open fails (nm_open's *stage).
enum {
	NM_OPEN_INPUT = 1,  // avformat_open_input
	NM_STREAM_INFO = 2, // avformat_find_stream_info
	NM_NO_AUDIO = 3,    // no audio stream
	NM_NO_DECODER = 4,  // no decoder for the codec
	NM_OPEN_CODEC = 5,  // avcodec_open2 and the rest of the setup
};

// nm_open opens url for decoding; on failure it returns a negative AVERROR
// and sets *stage. *interrupt, when it becomes non-zero, makes blocking
// I/O give up (AVIO interrupt callback).
int nm_open(const char *url, volatile int *interrupt, nm_dec **out, int *stage, char *codec, int codec_len);

// nm_read decodes until it has output: it returns the number of samples
// (> 0) at *out, valid until the next call; 0 at the end of the input; a
// negative AVERROR for a read error that ends the input early.
int nm_read(nm_dec *d, float **out);

// nm_errors is the number of packets the decoder refused and of frames
// it decoded.
void nm_stats(nm_dec *d, int64_t *failed, int64_t *decoded, int *first_error);

void nm_close(nm_dec *d);

#endif
