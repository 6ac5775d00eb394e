//go:build cgo && !notaglib

// TagLib shim of package tagwrite: edits the tags of ours in a file through
// TagLib's C++ API (the C binding tag_c cannot reach TXXX frames or MP4
// free-form atoms). See shim.h for the interface.
//
// TagLib does its I/O through an IOStream. Its own FileStream ignores the
// result of fwrite (TagLib 1.x), so a full disk in the middle of a save would
// go unnoticed and leave a truncated file that looks saved. FdStream below
// does every read and write with pread/pwrite on the caller's descriptor and
// remembers the first failure with its errno; a save with any failed I/O is
// reported as failed, and the caller discards the (temporary) file.

#include "shim.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <taglib.h>
#include <tbytevector.h>
#include <tiostream.h>
#include <tstring.h>
#include <tstringlist.h>

#include <aifffile.h>
#include <apefile.h>
#include <apeitem.h>
#include <apetag.h>
#include <asfattribute.h>
#include <asffile.h>
#include <asftag.h>
#include <flacfile.h>
#include <id3v2framefactory.h>
#include <id3v2tag.h>
#include <mp4file.h>
#include <mp4item.h>
#include <mp4tag.h>
#include <mpegfile.h>
#include <oggflacfile.h>
#include <opusfile.h>
#include <textidentificationframe.h>
#include <vorbisfile.h>
#include <wavfile.h>
#include <wavpackfile.h>
#include <xiphcomment.h>

namespace {

#if TAGLIB_MAJOR_VERSION >= 2
typedef TagLib::offset_t off_type;   // seek offsets, positions, lengths
typedef TagLib::offset_t start_type; // insert/removeBlock start
typedef size_t len_type;             // block lengths
#else
typedef long off_type;
typedef unsigned long start_type;
typedef unsigned long len_type;
#endif

// Failure is what a call reports: errno (0 for a non-I/O failure), text,
// and whether TagLib could not handle the file's content (invalid: it could
// not parse the file as its format, or could not save it without any I/O
// error; the same file fails the same way every time).
struct Failure {
	int err_no = 0;
	bool invalid = false;
	std::string msg;
	bool failed() const { return !msg.empty(); }
	void set(int e, const std::string &m) {
		if (failed()) return; // keep the first failure
		err_no = e;
		msg = m;
	}
	void setInvalid(const std::string &m) {
		if (failed()) return;
		invalid = true;
		msg = m;
	}
};

// notParsed records that TagLib could not open the file as what.
void notParsed(Failure *f, const char *what) {
	f->setInvalid(std::string("could not open or parse the file as ") + what);
}

class FdStream : public TagLib::IOStream {
public:
	FdStream(int fd, const char *name, bool read_only) : fd_(fd), name_(name ? name : ""), ro_(read_only) {}

	const Failure &failure() const { return fail_; }

	TagLib::FileName name() const override { return name_.c_str(); }

	TagLib::ByteVector readBlock(len_type length) override {
		off_type size = fileSize();
		if (fail_.failed() || length == 0 || pos_ >= size) return TagLib::ByteVector();
		// Never allocate more than the file holds (sizes read from a corrupt
		// header can be huge).
		uint64_t n = std::min<uint64_t>(length, static_cast<uint64_t>(size - pos_));
		TagLib::ByteVector v(static_cast<unsigned int>(n), 0);
		size_t got = preadFull(v.data(), n, pos_);
		v.resize(static_cast<unsigned int>(got));
		pos_ += static_cast<off_type>(got);
		return v;
	}

	void writeBlock(const TagLib::ByteVector &data) override {
		if (!writable()) return;
		pwriteFull(data.data(), data.size(), pos_);
		pos_ += static_cast<off_type>(data.size());
	}

	// insert replaces [start, start+replace) by data, moving the rest of the
	// file by the difference.
	void insert(const TagLib::ByteVector &data, start_type start = 0, len_type replace = 0) override {
		if (!writable()) return;
		uint64_t size = static_cast<uint64_t>(fileSize());
		if (fail_.failed()) return;
		uint64_t s = static_cast<uint64_t>(start), n = data.size();
		uint64_t tail = s >= size ? size : std::min<uint64_t>(s + replace, size);
		uint64_t tail_len = size - tail;
		if (s < size) moveTail(tail, tail_len, s + n);
		if (!fail_.failed() && s + n + tail_len < size) truncateTo(s + n + tail_len);
		if (!fail_.failed() && n > 0) pwriteFull(data.data(), n, static_cast<off_type>(s));
		pos_ = static_cast<off_type>(s + n);
	}

	void removeBlock(start_type start = 0, len_type length = 0) override {
		insert(TagLib::ByteVector(), start, length);
	}

	bool readOnly() const override { return ro_; }
	bool isOpen() const override { return fd_ >= 0; }

	void seek(off_type offset, Position p = Beginning) override {
		off_type base = 0;
		switch (p) {
		case Beginning: base = 0; break;
		case Current: base = pos_; break;
		case End: base = fileSize(); break;
		}
		// Like fseek, a seek before the start fails and leaves the position.
		if (base + offset >= 0) pos_ = base + offset;
	}

	void clear() override {}
	off_type tell() const override { return pos_; }
	off_type length() override { return fileSize(); }

	void truncate(off_type length) override {
		if (!writable()) return;
		truncateTo(static_cast<uint64_t>(length));
	}

	// Plain positioned I/O for the MP4 name patch.
	size_t preadAt(char *p, uint64_t n, uint64_t off) { return preadFull(p, n, static_cast<off_type>(off)); }
	void pwriteAt(const char *p, uint64_t n, uint64_t off) {
		if (writable()) pwriteFull(p, n, static_cast<off_type>(off));
	}
	off_type size() { return fileSize(); }

private:
	bool writable() {
		if (fail_.failed()) return false;
		if (ro_) {
			fail_.set(EBADF, "write to a stream opened read-only");
			return false;
		}
		return true;
	}

	off_type fileSize() {
		struct stat st;
		if (fstat(fd_, &st) != 0) {
			fail_.set(errno, std::string("fstat: ") + strerror(errno));
			return 0;
		}
		return static_cast<off_type>(st.st_size);
	}

	size_t preadFull(char *p, uint64_t n, off_type off) {
		uint64_t done = 0;
		while (done < n) {
			ssize_t r = pread(fd_, p + done, n - done, off + static_cast<off_type>(done));
			if (r < 0) {
				if (errno == EINTR) continue;
				fail_.set(errno, std::string("read: ") + strerror(errno));
				break;
			}
			if (r == 0) break; // end of file
			done += static_cast<uint64_t>(r);
		}
		return done;
	}

	void pwriteFull(const char *p, uint64_t n, off_type off) {
		uint64_t done = 0;
		while (done < n) {
			ssize_t r = pwrite(fd_, p + done, n - done, off + static_cast<off_type>(done));
			if (r < 0) {
				if (errno == EINTR) continue;
				fail_.set(errno, std::string("write: ") + strerror(errno));
				return;
			}
			if (r == 0) {
				fail_.set(EIO, "write: no progress");
				return;
			}
			done += static_cast<uint64_t>(r);
		}
	}

	void truncateTo(uint64_t n) {
		if (ftruncate(fd_, static_cast<off_t>(n)) != 0) fail_.set(errno, std::string("truncate: ") + strerror(errno));
	}

	// moveTail moves [from, from+len) to dst in chunks, back to front when
	// moving towards the end so that no byte is overwritten before it is read.
	void moveTail(uint64_t from, uint64_t len, uint64_t dst) {
		if (len == 0 || from == dst) return;
		const uint64_t chunk = 1 << 20;
		std::vector<char> buf(static_cast<size_t>(std::min(chunk, len)));
		if (dst > from) {
			uint64_t left = len;
			while (left > 0 && !fail_.failed()) {
				uint64_t n = std::min(chunk, left);
				left -= n;
				if (preadFull(buf.data(), n, static_cast<off_type>(from + left)) != n) {
					fail_.set(fail_.failed() ? fail_.err_no : EIO, "read: short read while moving data");
					return;
				}
				pwriteFull(buf.data(), n, static_cast<off_type>(dst + left));
			}
		} else {
			uint64_t done = 0;
			while (done < len && !fail_.failed()) {
				uint64_t n = std::min(chunk, len - done);
				if (preadFull(buf.data(), n, static_cast<off_type>(from + done)) != n) {
					fail_.set(fail_.failed() ? fail_.err_no : EIO, "read: short read while moving data");
					return;
				}
				pwriteFull(buf.data(), n, static_cast<off_type>(dst + done));
				done += n;
			}
		}
	}

	int fd_;
	std::string name_;
	bool ro_;
	off_type pos_ = 0;
	Failure fail_;
};

typedef std::vector<std::pair<std::string, std::string>> Records;

bool decodeRecords(const char *buf, size_t len, Records *out) {
	size_t off = 0;
	auto field = [&](std::string *s) {
		if (len - off < 4) return false;
		const unsigned char *p = reinterpret_cast<const unsigned char *>(buf + off);
		uint32_t n = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
		off += 4;
		if (len - off < n) return false;
		s->assign(buf + off, n);
		off += n;
		return true;
	};
	while (off < len) {
		std::string k, v;
		if (!field(&k) || !field(&v)) return false;
		out->emplace_back(std::move(k), std::move(v));
	}
	return true;
}

void encodeRecord(std::string *out, const std::string &s) {
	uint32_t n = static_cast<uint32_t>(s.size());
	char b[4] = {char(n & 0xff), char(n >> 8 & 0xff), char(n >> 16 & 0xff), char(n >> 24 & 0xff)};
	out->append(b, 4);
	out->append(s);
}

TagLib::String str(const std::string &s) { return TagLib::String(s, TagLib::String::UTF8); }
std::string utf8(const TagLib::String &s) { return s.to8Bit(true); }
bool hasPrefix(const std::string &s, const std::string &p) { return s.compare(0, p.size(), p) == 0; }


// ---- Standard fields: edits of one multi-valued field by its name in the
// format (TMOO, ----:com.apple.iTunes:MOOD, MOOD, WM/Mood, …).

// StdEdit removes every value of the field equal to one of remove, then
// appends add; the values left keep their order.
struct StdEdit {
	std::string name;
	std::vector<std::string> remove, add;
};
typedef std::vector<StdEdit> StdEdits;

// decodeStd groups records "-<name>" (a value to remove) and "+<name>" (a
// value to add) by name, in order of first appearance.
bool decodeStd(const Records &recs, StdEdits *out) {
	for (const auto &kv : recs) {
		if (kv.first.size() < 2 || (kv.first[0] != '-' && kv.first[0] != '+')) return false;
		std::string name = kv.first.substr(1);
		auto it = std::find_if(out->begin(), out->end(), [&](const StdEdit &e) { return e.name == name; });
		if (it == out->end()) {
			out->push_back(StdEdit{name, {}, {}});
			it = out->end() - 1;
		}
		(kv.first[0] == '-' ? it->remove : it->add).push_back(kv.second);
	}
	return true;
}

bool removed(const StdEdit &e, const TagLib::String &v) {
	return std::find(e.remove.begin(), e.remove.end(), utf8(v)) != e.remove.end();
}

// kept is cur without the values e removes.
TagLib::StringList kept(const TagLib::StringList &cur, const StdEdit &e) {
	TagLib::StringList out;
	for (const auto &v : cur)
		if (!removed(e, v)) out.append(v);
	return out;
}

// names is the list of field names a read returns besides ours (records
// (name, "")).
typedef std::vector<std::string> Names;

bool decodeNames(const char *buf, size_t len, Names *out) {
	Records recs;
	if (!decodeRecords(buf, len, &recs)) return false;
	for (const auto &kv : recs) out->push_back(kv.first);
	return true;
}

// ---- ID3v2 (MP3, WAV, AIFF): TXXX frames whose description starts with
// the prefix; standard fields are text frames (TMOO, TCON), several values
// null-separated (ID3v2.4).

void editID3(TagLib::ID3v2::Tag *tag, const std::string &prefix, const Records &recs, const StdEdits &std) {
	TagLib::ID3v2::FrameList frames = tag->frameList("TXXX"); // a copy: removal edits the tag's own list
	for (TagLib::ID3v2::Frame *fr : frames) {
		auto *u = dynamic_cast<TagLib::ID3v2::UserTextIdentificationFrame *>(fr);
		if (u && hasPrefix(utf8(u->description()), prefix)) tag->removeFrame(fr, true);
	}
	for (const auto &kv : recs) {
		auto *fr = new TagLib::ID3v2::UserTextIdentificationFrame(TagLib::String::UTF8);
		fr->setDescription(str(kv.first));
		fr->setText(str(kv.second));
		tag->addFrame(fr);
	}
	for (const auto &e : std) {
		TagLib::ByteVector id(e.name.c_str());
		TagLib::ID3v2::FrameList same = tag->frameList(id);
		bool added = false;
		for (TagLib::ID3v2::Frame *fr : same) {
			auto *t = dynamic_cast<TagLib::ID3v2::TextIdentificationFrame *>(fr);
			if (!t) continue;
			TagLib::StringList l = kept(t->fieldList(), e);
			if (!added) {
				for (const auto &a : e.add) l.append(str(a));
				added = true;
			}
			if (l.isEmpty()) {
				tag->removeFrame(fr, true);
			} else if (l != t->fieldList()) {
				t->setText(l);
			}
		}
		if (!added && !e.add.empty()) {
			auto *fr = new TagLib::ID3v2::TextIdentificationFrame(id, TagLib::String::UTF8);
			TagLib::StringList l;
			for (const auto &a : e.add) l.append(str(a));
			fr->setText(l);
			tag->addFrame(fr);
		}
	}
}

void readID3(TagLib::ID3v2::Tag *tag, const std::string &prefix, const Names &names, Records *out) {
	if (!tag) return;
	for (TagLib::ID3v2::Frame *fr : tag->frameList("TXXX")) {
		auto *u = dynamic_cast<TagLib::ID3v2::UserTextIdentificationFrame *>(fr);
		if (!u) continue;
		std::string desc = utf8(u->description());
		if (!hasPrefix(desc, prefix)) continue;
		// fieldList() is [description, value...].
		TagLib::StringList l = u->fieldList();
		bool any = false;
		for (auto it = l.begin(); it != l.end(); ++it) {
			if (it == l.begin()) continue;
			out->emplace_back(desc, utf8(*it));
			any = true;
		}
		if (!any) out->emplace_back(desc, "");
	}
	for (const auto &n : names) {
		if (n.size() != 4) continue;
		for (TagLib::ID3v2::Frame *fr : tag->frameList(TagLib::ByteVector(n.c_str()))) {
			auto *t = dynamic_cast<TagLib::ID3v2::TextIdentificationFrame *>(fr);
			if (!t) continue;
			for (const auto &v : t->fieldList()) out->emplace_back(n, utf8(v));
		}
	}
}

bool writeMP3(FdStream &st, const std::string &prefix, const Records &recs, const StdEdits &std, Failure *f) {
#if TAGLIB_MAJOR_VERSION >= 2
	TagLib::MPEG::File file(&st, false);
#else
	TagLib::MPEG::File file(&st, TagLib::ID3v2::FrameFactory::instance(), false);
#endif
	if (!file.isValid()) {
		notParsed(f, "MPEG audio");
		return false;
	}
	editID3(file.ID3v2Tag(true), prefix, recs, std);
	// Only the ID3v2 tag is saved, as version 2.4: StripNone leaves the
	// other tag types where they are, and DoNotDuplicate copies nothing
	// between them. TagLib (1.13, MPEG::File::save) renders only the types
	// it is given, so an ID3v1 or APE tag at the end of the file keeps its
	// bytes; a grown or shrunk ID3v2 tag moves them along with the audio
	// (FdStream::insert). Saving AllTags would render them again: TagLib
	// cuts a 29-30 character ID3v1.0 comment to 28, strips spaces and
	// reorders APE items.
	return file.save(TagLib::MPEG::File::ID3v2, TagLib::File::StripNone, TagLib::ID3v2::v4,
	                 TagLib::File::DoNotDuplicate);
}

bool readMP3(FdStream &st, const std::string &prefix, const Names &names, Records *out, Failure *f) {
#if TAGLIB_MAJOR_VERSION >= 2
	TagLib::MPEG::File file(&st, false);
#else
	TagLib::MPEG::File file(&st, TagLib::ID3v2::FrameFactory::instance(), false);
#endif
	if (!file.isValid()) {
		notParsed(f, "MPEG audio");
		return false;
	}
	readID3(file.ID3v2Tag(false), prefix, names, out);
	return true;
}

// WAV: the ID3v2 tag is the "ID3 " chunk. Only it is saved (StripNone,
// ID3v2 alone): the RIFF INFO chunk keeps its bytes.
//
// A WAV tagged only in its INFO chunk gets its first ID3v2 tag from
// Nomarr, and readers that prefer ID3v2 (TagLib's tag and property map,
// hence Navidrome) would then show none of the INFO chunk's title,
// artist, album or genre. So an ID3v2 tag without frames is first given
// the INFO chunk's fields (infoAsID3), and reading such a file reports
// them too: the INFO genre is the user's GENRE value, kept first.
bool infoOnly(TagLib::RIFF::WAV::File &file) {
	return (!file.hasID3v2Tag() || file.ID3v2Tag()->frameList().isEmpty()) && file.hasInfoTag() &&
	       !file.InfoTag()->isEmpty();
}

void infoAsID3(TagLib::RIFF::WAV::File &file, TagLib::ID3v2::Tag *tag) {
	TagLib::Tag::duplicate(file.InfoTag(), tag, false);
}

bool writeWAV(FdStream &st, const std::string &prefix, const Records &recs, const StdEdits &std, Failure *f) {
	TagLib::RIFF::WAV::File file(&st, false);
	if (!file.isValid() || !file.ID3v2Tag()) {
		notParsed(f, "WAV");
		return false;
	}
	if (infoOnly(file)) infoAsID3(file, file.ID3v2Tag());
	editID3(file.ID3v2Tag(), prefix, recs, std);
	return file.save(TagLib::RIFF::WAV::File::ID3v2, TagLib::File::StripNone, TagLib::ID3v2::v4);
}

bool readWAV(FdStream &st, const std::string &prefix, const Names &names, Records *out, Failure *f) {
	TagLib::RIFF::WAV::File file(&st, false);
	if (!file.isValid()) {
		notParsed(f, "WAV");
		return false;
	}
	if (infoOnly(file)) {
		TagLib::ID3v2::Tag fromInfo;
		infoAsID3(file, &fromInfo);
		readID3(&fromInfo, prefix, names, out);
		return true;
	}
	readID3(file.ID3v2Tag(), prefix, names, out);
	return true;
}

// AIFF: the ID3v2 tag is the "ID3 " chunk, AIFF's only tag.
bool writeAIFF(FdStream &st, const std::string &prefix, const Records &recs, const StdEdits &std, Failure *f) {
	TagLib::RIFF::AIFF::File file(&st, false);
	if (!file.isValid() || !file.tag()) {
		notParsed(f, "AIFF");
		return false;
	}
	editID3(file.tag(), prefix, recs, std);
	return file.save(TagLib::ID3v2::v4);
}

bool readAIFF(FdStream &st, const std::string &prefix, const Names &names, Records *out, Failure *f) {
	TagLib::RIFF::AIFF::File file(&st, false);
	if (!file.isValid()) {
		notParsed(f, "AIFF");
		return false;
	}
	readID3(file.tag(), prefix, names, out);
	return true;
}

// ---- MP4: free-form items "----:<mean>:<name>".
//
// TagLib (1.13) renders a free-form item only when its key splits into
// exactly three parts at ':', so "----:com.apple.iTunes:nom:<key>" would be
// dropped silently on save, and so would any other software's free-form item
// with a ':' in its name. Before saving, every such name is given a
// placeholder (the unit separator 0x1F) for each of its colons; after saving,
// patchMP4Names puts the colons back in the file, byte for byte (same length,
// so no atom size or chunk offset changes).

const char kColonPlaceholder = '\x1f';

std::string freeformSafe(const std::string &key) {
	if (!hasPrefix(key, "----:")) return key;
	size_t mean_end = key.find(':', 5);
	if (mean_end == std::string::npos) return key;
	std::string out = key;
	std::replace(out.begin() + static_cast<long>(mean_end) + 1, out.end(), ':', kColonPlaceholder);
	return out;
}

struct Atom {
	uint64_t start, size, header; // header: bytes before the payload
	char type[5];
};

// readAtom reads the atom header at off (within [off, end)).
bool readAtom(FdStream &st, uint64_t off, uint64_t end, Atom *a) {
	if (end - off < 8) return false;
	unsigned char h[16];
	if (st.preadAt(reinterpret_cast<char *>(h), 8, off) != 8) return false;
	uint64_t size = uint64_t(h[0]) << 24 | uint64_t(h[1]) << 16 | uint64_t(h[2]) << 8 | h[3];
	a->header = 8;
	if (size == 1) {
		if (end - off < 16 || st.preadAt(reinterpret_cast<char *>(h + 8), 8, off + 8) != 8) return false;
		size = 0;
		for (int i = 8; i < 16; i++) size = size << 8 | h[i];
		a->header = 16;
	} else if (size == 0) {
		size = end - off;
	}
	if (size < a->header || size > end - off) return false;
	a->start = off;
	a->size = size;
	memcpy(a->type, h + 4, 4);
	a->type[4] = 0;
	return true;
}

// findChild returns the first child of the given type in [off, end).
bool findChild(FdStream &st, uint64_t off, uint64_t end, const char *type, Atom *out) {
	Atom a;
	while (off < end && readAtom(st, off, end, &a)) {
		if (memcmp(a.type, type, 4) == 0) {
			*out = a;
			return true;
		}
		off += a.size;
	}
	return false;
}

void patchMP4Names(FdStream &st, Failure *f) {
	uint64_t size = static_cast<uint64_t>(st.size());
	Atom moov, udta, meta, ilst;
	if (!findChild(st, 0, size, "moov", &moov)) return;
	if (!findChild(st, moov.start + moov.header, moov.start + moov.size, "udta", &udta)) return;
	if (!findChild(st, udta.start + udta.header, udta.start + udta.size, "meta", &meta)) return;
	// meta is a full box (version and flags) as TagLib writes it.
	uint64_t meta_body = meta.start + meta.header + 4;
	if (!findChild(st, meta_body, meta.start + meta.size, "ilst", &ilst)) return;
	uint64_t off = ilst.start + ilst.header, end = ilst.start + ilst.size;
	Atom item;
	while (off < end && readAtom(st, off, end, &item)) {
		Atom name;
		if (memcmp(item.type, "----", 4) == 0 &&
		    findChild(st, item.start + item.header, item.start + item.size, "name", &name)) {
			uint64_t p = name.start + name.header + 4; // after version and flags
			uint64_t n = name.start + name.size - p;
			if (name.size >= name.header + 4 && n > 0 && n < (1 << 16)) {
				std::string s(static_cast<size_t>(n), 0);
				if (st.preadAt(&s[0], n, p) != n) {
					f->set(EIO, "short read patching MP4 item names");
					return;
				}
				if (s.find(kColonPlaceholder) != std::string::npos) {
					std::replace(s.begin(), s.end(), kColonPlaceholder, ':');
					st.pwriteAt(s.data(), n, p);
				}
			}
		}
		off += item.size;
	}
}

bool writeMP4(FdStream &st, const std::string &prefix, const Records &recs, const StdEdits &std, Failure *f) {
	TagLib::MP4::File file(&st, false);
	if (!file.isValid() || !file.tag()) {
		notParsed(f, "MP4");
		return false;
	}
	TagLib::MP4::Tag *tag = file.tag();
	std::vector<std::pair<TagLib::String, TagLib::MP4::Item>> keep;
	std::vector<TagLib::String> drop;
	for (const auto &kv : tag->itemMap()) {
		std::string k = utf8(kv.first);
		if (hasPrefix(k, prefix)) {
			drop.push_back(kv.first);
		} else if (freeformSafe(k) != k) {
			// Someone else's free-form item with a ':' in its name: keep it
			// under its placeholder name so that TagLib renders it.
			drop.push_back(kv.first);
			keep.emplace_back(str(freeformSafe(k)), kv.second);
		}
	}
	for (const auto &k : drop) tag->removeItem(k);
	for (const auto &kv : keep) tag->setItem(kv.first, kv.second);
	for (const auto &kv : recs) tag->setItem(str(freeformSafe(kv.first)), TagLib::MP4::Item(TagLib::StringList(str(kv.second))));
	// A standard field is one item of several values (one data atom each).
	for (const auto &e : std) {
		TagLib::String key = str(freeformSafe(e.name));
		TagLib::StringList l = tag->contains(key) ? kept(tag->item(key).toStringList(), e) : TagLib::StringList();
		for (const auto &a : e.add) l.append(str(a));
		if (l.isEmpty()) {
			if (tag->contains(key)) tag->removeItem(key);
		} else {
			tag->setItem(key, TagLib::MP4::Item(l));
		}
	}
	if (!file.save()) return false;
	if (st.failure().failed()) return false;
	patchMP4Names(st, f);
	return !f->failed();
}

bool readMP4(FdStream &st, const std::string &prefix, const Names &names, Records *out, Failure *f) {
	TagLib::MP4::File file(&st, false);
	if (!file.isValid() || !file.tag()) {
		notParsed(f, "MP4");
		return false;
	}
	for (const auto &kv : file.tag()->itemMap()) {
		std::string k = utf8(kv.first);
		bool named = std::find(names.begin(), names.end(), k) != names.end();
		if (!named && !hasPrefix(k, prefix)) continue;
		TagLib::StringList l = kv.second.toStringList();
		if (l.isEmpty() && !named) out->emplace_back(k, "");
		for (const auto &v : l) out->emplace_back(k, utf8(v));
	}
	return true;
}

// ---- FLAC, Ogg Vorbis, Opus, Ogg FLAC: Vorbis comment fields; a standard
// field is repeated once per value.

void editXiph(TagLib::Ogg::XiphComment *x, const std::string &prefix, const Records &recs, const StdEdits &std) {
	std::vector<TagLib::String> drop;
	for (const auto &kv : x->fieldListMap())
		if (hasPrefix(utf8(kv.first.upper()), prefix)) drop.push_back(kv.first);
	for (const auto &k : drop) x->removeFields(k);
	for (const auto &kv : recs) x->addField(str(kv.first), str(kv.second), false);
	for (const auto &e : std) {
		for (const auto &r : e.remove) x->removeFields(str(e.name), str(r));
		for (const auto &a : e.add) x->addField(str(e.name), str(a), false);
	}
}

void readXiph(TagLib::Ogg::XiphComment *x, const std::string &prefix, const Names &names, Records *out) {
	if (!x) return;
	for (const auto &kv : x->fieldListMap()) {
		std::string k = utf8(kv.first.upper());
		bool named = std::find(names.begin(), names.end(), k) != names.end();
		if (!named && !hasPrefix(k, prefix)) continue;
		for (const auto &v : kv.second) out->emplace_back(k, utf8(v));
	}
}

template <class F> bool xiphValid(F &file, Failure *f, const char *what) {
	if (!file.isValid()) {
		notParsed(f, what);
		return false;
	}
	return true;
}

bool writeXiph(FdStream &st, int format, const std::string &prefix, const Records &recs, const StdEdits &std,
               Failure *f) {
	switch (format) {
	case NOM_FMT_FLAC: {
#if TAGLIB_MAJOR_VERSION >= 2
		TagLib::FLAC::File file(&st, false);
#else
		TagLib::FLAC::File file(&st, TagLib::ID3v2::FrameFactory::instance(), false);
#endif
		if (!xiphValid(file, f, "FLAC")) return false;
		editXiph(file.xiphComment(true), prefix, recs, std);
		return file.save();
	}
	case NOM_FMT_VORBIS: {
		TagLib::Ogg::Vorbis::File file(&st, false);
		if (!xiphValid(file, f, "Ogg Vorbis") || !file.tag()) return false;
		editXiph(file.tag(), prefix, recs, std);
		return file.save();
	}
	case NOM_FMT_OPUS: {
		TagLib::Ogg::Opus::File file(&st, false);
		if (!xiphValid(file, f, "Ogg Opus") || !file.tag()) return false;
		editXiph(file.tag(), prefix, recs, std);
		return file.save();
	}
	case NOM_FMT_OGGFLAC: {
		TagLib::Ogg::FLAC::File file(&st, false);
		if (!xiphValid(file, f, "Ogg FLAC") || !file.tag()) return false;
		editXiph(file.tag(), prefix, recs, std);
		return file.save();
	}
	}
	f->set(0, "unknown format");
	return false;
}

bool readXiphFile(FdStream &st, int format, const std::string &prefix, const Names &names, Records *out, Failure *f) {
	switch (format) {
	case NOM_FMT_FLAC: {
#if TAGLIB_MAJOR_VERSION >= 2
		TagLib::FLAC::File file(&st, false);
#else
		TagLib::FLAC::File file(&st, TagLib::ID3v2::FrameFactory::instance(), false);
#endif
		if (!xiphValid(file, f, "FLAC")) return false;
		readXiph(file.xiphComment(false), prefix, names, out);
		return true;
	}
	case NOM_FMT_VORBIS: {
		TagLib::Ogg::Vorbis::File file(&st, false);
		if (!xiphValid(file, f, "Ogg Vorbis")) return false;
		readXiph(file.tag(), prefix, names, out);
		return true;
	}
	case NOM_FMT_OPUS: {
		TagLib::Ogg::Opus::File file(&st, false);
		if (!xiphValid(file, f, "Ogg Opus")) return false;
		readXiph(file.tag(), prefix, names, out);
		return true;
	}
	case NOM_FMT_OGGFLAC: {
		TagLib::Ogg::FLAC::File file(&st, false);
		if (!xiphValid(file, f, "Ogg FLAC")) return false;
		readXiph(file.tag(), prefix, names, out);
		return true;
	}
	}
	f->set(0, "unknown format");
	return false;
}

// ---- WavPack, Monkey's Audio: APEv2 items (keys case-insensitive, TagLib
// keeps them upper-case); a standard field is one text item of several
// values. A binary item under a standard field's name is left alone.

void editAPE(TagLib::APE::Tag *tag, const std::string &prefix, const Records &recs, const StdEdits &std) {
	std::vector<TagLib::String> drop;
	for (const auto &kv : tag->itemListMap())
		if (hasPrefix(utf8(kv.first.upper()), prefix)) drop.push_back(kv.first);
	for (const auto &k : drop) tag->removeItem(k);
	for (const auto &kv : recs) tag->setItem(str(kv.first), TagLib::APE::Item(str(kv.first), str(kv.second)));
	for (const auto &e : std) {
		TagLib::String key = str(e.name).upper();
		auto it = tag->itemListMap().find(key);
		if (it != tag->itemListMap().end() && it->second.type() != TagLib::APE::Item::Text) continue;
		TagLib::StringList l = it != tag->itemListMap().end() ? kept(it->second.values(), e) : TagLib::StringList();
		for (const auto &a : e.add) l.append(str(a));
		if (l.isEmpty()) {
			if (it != tag->itemListMap().end()) tag->removeItem(key);
		} else if (it != tag->itemListMap().end()) {
			TagLib::APE::Item item = it->second;
			item.setValues(l);
			tag->setItem(key, item);
		} else {
			tag->setItem(key, TagLib::APE::Item(key, l));
		}
	}
}

void readAPE(TagLib::APE::Tag *tag, const std::string &prefix, const Names &names, Records *out) {
	if (!tag) return;
	for (const auto &kv : tag->itemListMap()) {
		if (kv.second.type() != TagLib::APE::Item::Text) continue;
		std::string k = utf8(kv.first.upper());
		bool named = std::find(names.begin(), names.end(), k) != names.end();
		if (!named && !hasPrefix(k, prefix)) continue;
		TagLib::StringList l = kv.second.values();
		if (l.isEmpty() && !named) out->emplace_back(k, "");
		for (const auto &v : l) out->emplace_back(k, utf8(v));
	}
}

// The APE tag is saved at the end of the file; an ID3v1 tag there is
// rendered again by TagLib's save.
template <class F>
bool writeAPEFile(FdStream &st, const char *what, const std::string &prefix, const Records &recs, const StdEdits &std,
                  Failure *f) {
	F file(&st, false);
	if (!file.isValid()) {
		notParsed(f, what);
		return false;
	}
	editAPE(file.APETag(true), prefix, recs, std);
	return file.save();
}

template <class F>
bool readAPEFile(FdStream &st, const char *what, const std::string &prefix, const Names &names, Records *out,
                 Failure *f) {
	F file(&st, false);
	if (!file.isValid()) {
		notParsed(f, what);
		return false;
	}
	readAPE(file.APETag(false), prefix, names, out);
	return true;
}

// ---- WMA (ASF): attributes; a standard field is one attribute per value.
// Attributes under a standard field's name that are not text are kept.

void editASF(TagLib::ASF::Tag *tag, const std::string &prefix, const Records &recs, const StdEdits &std) {
	std::vector<TagLib::String> drop;
	for (const auto &kv : tag->attributeListMap())
		if (hasPrefix(utf8(kv.first), prefix)) drop.push_back(kv.first);
	for (const auto &k : drop) tag->removeItem(k);
	for (const auto &kv : recs) tag->setAttribute(str(kv.first), TagLib::ASF::Attribute(str(kv.second)));
	for (const auto &e : std) {
		TagLib::String key = str(e.name);
		TagLib::ASF::AttributeList l;
		for (const auto &a : tag->attribute(key))
			if (a.type() != TagLib::ASF::Attribute::UnicodeType || !removed(e, a.toString())) l.append(a);
		for (const auto &a : e.add) l.append(TagLib::ASF::Attribute(str(a)));
		if (l.isEmpty()) {
			if (tag->contains(key)) tag->removeItem(key);
		} else {
			tag->setAttribute(key, l);
		}
	}
}

void readASF(TagLib::ASF::Tag *tag, const std::string &prefix, const Names &names, Records *out) {
	if (!tag) return;
	for (const auto &kv : tag->attributeListMap()) {
		std::string k = utf8(kv.first);
		bool named = std::find(names.begin(), names.end(), k) != names.end();
		if (!named && !hasPrefix(k, prefix)) continue;
		for (const auto &a : kv.second)
			if (a.type() == TagLib::ASF::Attribute::UnicodeType) out->emplace_back(k, utf8(a.toString()));
	}
}

bool writeASF(FdStream &st, const std::string &prefix, const Records &recs, const StdEdits &std, Failure *f) {
	TagLib::ASF::File file(&st, false);
	if (!file.isValid() || !file.tag()) {
		notParsed(f, "ASF");
		return false;
	}
	editASF(file.tag(), prefix, recs, std);
	return file.save();
}

bool readASFFile(FdStream &st, const std::string &prefix, const Names &names, Records *out, Failure *f) {
	TagLib::ASF::File file(&st, false);
	if (!file.isValid()) {
		notParsed(f, "ASF");
		return false;
	}
	readASF(file.tag(), prefix, names, out);
	return true;
}

char *dupMsg(const std::string &s) {
	char *p = static_cast<char *>(malloc(s.size() + 1));
	if (p) memcpy(p, s.c_str(), s.size() + 1);
	return p;
}

// finish turns the outcome of a call into its return value: 0, -1 or
// NOM_ERR_INVALID (see shim.h).
int finish(bool ok, const FdStream &st, Failure &f, int *err_no, char **msg) {
	// An I/O failure of the stream explains a failed parse or save best (a
	// read error looks like a file TagLib cannot parse); it also fails a save
	// that TagLib believed successful.
	if (st.failure().failed()) f = st.failure();
	if (ok && !f.failed()) return 0;
	if (!f.failed()) f.setInvalid("could not save the file (not an I/O error)");
	*err_no = f.err_no;
	*msg = dupMsg(f.msg);
	return f.invalid ? NOM_ERR_INVALID : -1;
}

} // namespace

extern "C" int nom_tag_write(int fd, const char *name, int format, const char *prefix, const char *buf, size_t len,
                             const char *std_buf, size_t std_len, int *err_no, char **msg) {
	*err_no = 0;
	*msg = nullptr;
	Failure f;
	try {
		Records recs, std_recs;
		StdEdits std;
		if (!decodeRecords(buf, len, &recs) || !decodeRecords(std_buf, std_len, &std_recs) ||
		    !decodeStd(std_recs, &std)) {
			f.set(EINVAL, "malformed tag buffer");
			*err_no = f.err_no;
			*msg = dupMsg(f.msg);
			return -1;
		}
		FdStream st(fd, name, false);
		bool ok = false;
		switch (format) {
		case NOM_FMT_MP3: ok = writeMP3(st, prefix, recs, std, &f); break;
		case NOM_FMT_MP4: ok = writeMP4(st, prefix, recs, std, &f); break;
		case NOM_FMT_WAV: ok = writeWAV(st, prefix, recs, std, &f); break;
		case NOM_FMT_AIFF: ok = writeAIFF(st, prefix, recs, std, &f); break;
		case NOM_FMT_WAVPACK: ok = writeAPEFile<TagLib::WavPack::File>(st, "WavPack", prefix, recs, std, &f); break;
		case NOM_FMT_APE: ok = writeAPEFile<TagLib::APE::File>(st, "Monkey's Audio", prefix, recs, std, &f); break;
		case NOM_FMT_ASF: ok = writeASF(st, prefix, recs, std, &f); break;
		default: ok = writeXiph(st, format, prefix, recs, std, &f); break;
		}
		return finish(ok, st, f, err_no, msg);
	} catch (const std::exception &e) {
		*msg = dupMsg(std::string("TagLib: ") + e.what());
	} catch (...) {
		*msg = dupMsg("TagLib: unknown exception");
	}
	return -1;
}

extern "C" int nom_tag_read(int fd, const char *name, int format, const char *prefix, const char *names_buf,
                            size_t names_len, char **out, size_t *out_len, int *err_no, char **msg) {
	*err_no = 0;
	*msg = nullptr;
	*out = nullptr;
	*out_len = 0;
	Failure f;
	try {
		Names names;
		if (!decodeNames(names_buf, names_len, &names)) {
			*err_no = EINVAL;
			*msg = dupMsg("malformed name buffer");
			return -1;
		}
		FdStream st(fd, name, true);
		Records recs;
		bool ok = false;
		switch (format) {
		case NOM_FMT_MP3: ok = readMP3(st, prefix, names, &recs, &f); break;
		case NOM_FMT_MP4: ok = readMP4(st, prefix, names, &recs, &f); break;
		case NOM_FMT_WAV: ok = readWAV(st, prefix, names, &recs, &f); break;
		case NOM_FMT_AIFF: ok = readAIFF(st, prefix, names, &recs, &f); break;
		case NOM_FMT_WAVPACK: ok = readAPEFile<TagLib::WavPack::File>(st, "WavPack", prefix, names, &recs, &f); break;
		case NOM_FMT_APE: ok = readAPEFile<TagLib::APE::File>(st, "Monkey's Audio", prefix, names, &recs, &f); break;
		case NOM_FMT_ASF: ok = readASFFile(st, prefix, names, &recs, &f); break;
		default: ok = readXiphFile(st, format, prefix, names, &recs, &f); break;
		}
		int rc = finish(ok, st, f, err_no, msg);
		if (rc != 0) return rc;
		std::string enc;
		for (const auto &kv : recs) {
			encodeRecord(&enc, kv.first);
			encodeRecord(&enc, kv.second);
		}
		*out = static_cast<char *>(malloc(enc.size() + 1));
		if (!*out) {
			*msg = dupMsg("out of memory");
			return -1;
		}
		memcpy(*out, enc.data(), enc.size());
		*out_len = enc.size();
		return 0;
	} catch (const std::exception &e) {
		*msg = dupMsg(std::string("TagLib: ") + e.what());
	} catch (...) {
		*msg = dupMsg("TagLib: unknown exception");
	}
	return -1;
}
