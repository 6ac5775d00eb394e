//go:build cgo && !notaglib

// C interface of the TagLib shim (shim.cpp). Both calls work on a file
// descriptor the Go side opened; they never open, close or rename files.
//
// Tags travel as one buffer of records, each a key then a value, each a
// 4-byte little-endian length followed by that many bytes of UTF-8. Keys are
// the full names in the file: "nom:<key>" (ID3v2 TXXX description: MP3, WAV,
// AIFF; ASF attribute: WMA), "----:com.apple.iTunes:nom:<key>" (MP4) or
// "NOM_<KEY>" (Vorbis comment: FLAC, Ogg; APEv2 item: WavPack, Monkey's
// Audio); prefix is the part of these names that marks a tag as ours ("nom:",
// "----:com.apple.iTunes:nom:", "NOM_").
//
// Standard fields (mood, genre) are named as the format names them: the
// ID3v2 frame id ("TMOO", "TCON"), the MP4 item ("----:com.apple.iTunes:MOOD",
// "©gen"), the Vorbis or APE field upper-case ("MOOD", "GENRE"), the
// ASF attribute ("WM/Mood", "WM/Genre"). Each holds a list of values.
//
// Both return 0 on success. On failure they set *msg to a malloc'd message
// the caller frees and return
//   - NOM_ERR_INVALID when TagLib cannot handle the file's content: it could
//     not open or parse the file as the format, or could not save it, with no
//     I/O error (the same file fails the same way every time); *err_no is 0;
//   - -1 otherwise, with *err_no the errno of the failed system call (0 when
//     the failure is not an I/O error: an exception, a malformed buffer, …).
#ifndef NOMARR_TAGWRITE_SHIM_H
#define NOMARR_TAGWRITE_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Return value of a call that failed because TagLib cannot handle the file.
enum { NOM_ERR_INVALID = -2 };

// Container formats (must match the Go constants).
enum {
	NOM_FMT_MP3 = 1,
	NOM_FMT_MP4 = 2,
	NOM_FMT_FLAC = 3,
	NOM_FMT_VORBIS = 4,
	NOM_FMT_OPUS = 5,
	NOM_FMT_OGGFLAC = 6,
	NOM_FMT_WAV = 7,
	NOM_FMT_AIFF = 8,
	NOM_FMT_WAVPACK = 9,
	NOM_FMT_APE = 10,
	NOM_FMT_ASF = 11
};

// nom_tag_write removes every tag of ours (names starting with prefix) from
// the file open read-write on fd, adds the tags of buf, edits the standard
// fields as std says and saves, leaving every other tag, picture and the
// audio as they were. std holds records "-<field name>" (remove every value
// equal to this one) and "+<field name>" (append this value); the values
// a field keeps keep their order, and a field left without values is
// removed. name is for messages.
int nom_tag_write(int fd, const char *name, int format, const char *prefix, const char *buf, size_t len,
                  const char *std, size_t std_len, int *err_no, char **msg);

// nom_tag_read returns in *out (malloc'd, *out_len bytes, records as above)
// the tags of ours in the file open on fd, one record per value, followed
// by the values of the standard fields named in names (records with empty
// values), one record (name as given, value) per value.
int nom_tag_read(int fd, const char *name, int format, const char *prefix, const char *names, size_t names_len,
                 char **out, size_t *out_len, int *err_no, char **msg);

#ifdef __cplusplus
}
#endif

#endif
