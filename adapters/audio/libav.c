//go:build cgo && !nolibav

#include "libav.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/avstring.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <string.h>

struct nm_dec {
	AVFormatContext *fmt;
	AVCodecContext *codec;
	SwrContext *swr;
	AVPacket *pkt;
	AVFrame *frame;
	int stream;
	// The input parameters swr was set up for.
	int in_rate, in_format;
	AVChannelLayout in_layout;
	float *out;
	int out_cap;
	int at_eof;     // av_read_frame reached the end: the decoder is flushed
	int dec_eof;    // the decoder has given its last frame
	int swr_done;   // swr is flushed
	int read_error; // a read error ended the input
	int64_t failed, decoded;
	int first_error;
};

static int interrupted(void *flag) { return *(volatile int *)flag != 0; }

// grow makes room for n output samples.
static int grow(nm_dec *d, int n) {
	if (n <= d->out_cap)
		return 0;
	float *p = av_realloc(d->out, (size_t)n * sizeof(float));
	if (!p)
		return AVERROR(ENOMEM);
	d->out = p;
	d->out_cap = n;
	return 0;
}

// setup_swr (re)creates the resampler for frame's parameters, with the
// options ffmpeg's auto-inserted aresample filter gets from
// `-ac 1 -ar 16000 -rematrix_maxval 1 -f f32le`. A change of parameters
// mid-stream replaces it without flushing, as ffmpeg's filter graph
// reconfiguration does.
static int setup_swr(nm_dec *d, const AVFrame *f) {
	AVChannelLayout in = {0};
	int ret;
	if (f->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || f->ch_layout.nb_channels == 0) {
		int n = f->ch_layout.nb_channels;
		if (n <= 0)
			return AVERROR_INVALIDDATA;
		av_channel_layout_default(&in, n); // ffmpeg's "Guessed Channel Layout"
	} else if ((ret = av_channel_layout_copy(&in, &f->ch_layout)) < 0) {
		return ret;
	}
	if (d->swr && f->sample_rate == d->in_rate && f->format == d->in_format &&
	    !av_channel_layout_compare(&in, &d->in_layout)) {
		av_channel_layout_uninit(&in);
		return 0;
	}
	swr_free(&d->swr);
	av_channel_layout_uninit(&d->in_layout);
	d->in_layout = in;
	d->in_rate = f->sample_rate;
	d->in_format = f->format;
	AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
	ret = swr_alloc_set_opts2(&d->swr, &mono, AV_SAMPLE_FMT_FLT, 16000, &in, f->format, f->sample_rate, 0, NULL);
	if (ret < 0)
		return ret;
	if ((ret = av_opt_set_double(d->swr, "rematrix_maxval", 1.0, 0)) < 0)
		return ret;
	return swr_init(d->swr);
}

int nm_open(const char *url, volatile int *interrupt, nm_dec **out, int *stage, char *codec, int codec_len) {
	int ret;
	*out = NULL;
	codec[0] = 0;
	// A single allocation larger than this is a damaged file's claim.
	av_max_alloc(256 << 20);
	nm_dec *d = av_mallocz(sizeof(*d));
	if (!d) {
		*stage = NM_OPEN_INPUT;
		return AVERROR(ENOMEM);
	}
	d->fmt = avformat_alloc_context();
	if (!d->fmt) {
		nm_close(d);
		*stage = NM_OPEN_INPUT;
		return AVERROR(ENOMEM);
	}
	d->fmt->interrupt_callback.callback = interrupted;
	d->fmt->interrupt_callback.opaque = (void *)interrupt;
	AVDictionary *opts = NULL;
	av_dict_set(&opts, "protocol_whitelist", "file", 0);
	ret = avformat_open_input(&d->fmt, url, NULL, &opts);
	av_dict_free(&opts);
	if (ret < 0) {
		d->fmt = NULL; // freed by avformat_open_input
		nm_close(d);
		*stage = NM_OPEN_INPUT;
		return ret;
	}
	if ((ret = avformat_find_stream_info(d->fmt, NULL)) < 0) {
		nm_close(d);
		*stage = NM_STREAM_INFO;
		return ret;
	}
	// -map a:0: the first audio stream in stream order.
	d->stream = -1;
	for (unsigned i = 0; i < d->fmt->nb_streams; i++) {
		if (d->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
			d->stream = (int)i;
			break;
		}
	}
	if (d->stream < 0) {
		nm_close(d);
		*stage = NM_NO_AUDIO;
		return AVERROR_STREAM_NOT_FOUND;
	}
	AVStream *st = d->fmt->streams[d->stream];
	for (unsigned i = 0; i < d->fmt->nb_streams; i++)
		if ((int)i != d->stream)
			d->fmt->streams[i]->discard = AVDISCARD_ALL;
	const AVCodec *dec = avcodec_find_decoder(st->codecpar->codec_id);
	if (!dec) {
		av_strlcpy(codec, avcodec_get_name(st->codecpar->codec_id), codec_len);
		nm_close(d);
		*stage = NM_NO_DECODER;
		return AVERROR_DECODER_NOT_FOUND;
	}
	*stage = NM_OPEN_CODEC;
	if (!(d->codec = avcodec_alloc_context3(dec)) || !(d->pkt = av_packet_alloc()) || !(d->frame = av_frame_alloc())) {
		nm_close(d);
		return AVERROR(ENOMEM);
	}
	if ((ret = avcodec_parameters_to_context(d->codec, st->codecpar)) < 0) {
		nm_close(d);
		return ret;
	}
	d->codec->pkt_timebase = st->time_base;
	AVDictionary *copts = NULL;
	av_dict_set(&copts, "threads", "1", 0); // one worker, one core
	ret = avcodec_open2(d->codec, dec, &copts);
	av_dict_free(&copts);
	if (ret < 0) {
		nm_close(d);
		return ret;
	}
	*out = d;
	return 0;
}

// convert runs one frame (NULL: the flush) through swr into d->out and
// returns the number of samples.
static int convert(nm_dec *d, const AVFrame *f) {
	int in = f ? f->nb_samples : 0;
	int n = swr_get_out_samples(d->swr, in);
	if (n < 0)
		return n;
	int ret = grow(d, n + 16);
	if (ret < 0)
		return ret;
	uint8_t *dst = (uint8_t *)d->out;
	return swr_convert(d->swr, &dst, d->out_cap, f ? (const uint8_t **)f->extended_data : NULL, in);
}

// receive takes the decoder's next frame and converts it: samples (>= 0),
// AVERROR(EAGAIN) when the decoder wants input, AVERROR_EOF at its end.
static int receive(nm_dec *d) {
	int ret = avcodec_receive_frame(d->codec, d->frame);
	if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF)
		return ret;
	if (ret < 0) { // a damaged frame: ffmpeg logs it and goes on
		d->failed++;
		if (!d->first_error)
			d->first_error = ret;
		return 0;
	}
	d->decoded++;
	ret = setup_swr(d, d->frame);
	if (ret >= 0)
		ret = convert(d, d->frame);
	av_frame_unref(d->frame);
	return ret;
}

int nm_read(nm_dec *d, float **out) {
	*out = d->out;
	for (;;) {
		if (!d->dec_eof) {
			int n = receive(d);
			if (n > 0) {
				*out = d->out;
				return n;
			}
			if (n == AVERROR_EOF) {
				d->dec_eof = 1;
				continue;
			}
			if (n < 0 && n != AVERROR(EAGAIN))
				return n; // out of memory, a resampler failure
			if (n == 0)
				continue;
			// EAGAIN: feed a packet.
			if (d->at_eof) {
				avcodec_send_packet(d->codec, NULL);
				continue;
			}
			int ret = av_read_frame(d->fmt, d->pkt);
			if (ret < 0) {
				d->at_eof = 1;
				if (ret != AVERROR_EOF)
					d->read_error = ret;
				avcodec_send_packet(d->codec, NULL);
				continue;
			}
			if (d->pkt->stream_index == d->stream) {
				ret = avcodec_send_packet(d->codec, d->pkt);
				if (ret < 0 && ret != AVERROR(EAGAIN)) {
					d->failed++;
					if (!d->first_error)
						d->first_error = ret;
				}
			}
			av_packet_unref(d->pkt);
			continue;
		}
		if (!d->swr_done && d->swr) {
			int n = convert(d, NULL); // the resampler's delay, until none is left
			if (n > 0) {
				*out = d->out;
				return n;
			}
			d->swr_done = 1;
			if (n < 0)
				return n;
		}
		return d->read_error ? d->read_error : 0;
	}
}

void nm_stats(nm_dec *d, int64_t *failed, int64_t *decoded, int *first_error) {
	*failed = d->failed;
	*decoded = d->decoded;
	*first_error = d->first_error;
}

void nm_close(nm_dec *d) {
	if (!d)
		return;
	swr_free(&d->swr);
	av_channel_layout_uninit(&d->in_layout);
	av_frame_free(&d->frame);
	av_packet_free(&d->pkt);
	avcodec_free_context(&d->codec);
	avformat_close_input(&d->fmt);
	av_free(d->out);
	av_free(d);
}
