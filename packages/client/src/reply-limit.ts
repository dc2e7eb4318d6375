/**
 * The most of a reply the client reads. note: the largest real reply is a 201 for a full batch of
 * which every row failed on every field: 500 machines, each with a problem in each of its fields
 * and in each of its 100 capabilities (every problem in the reason and again in details) and an
 * external_id of 100 escaped characters, is about 15 KB a row, 7.5 MB in all (200 such listings,
 * each with 100 bad photo URLs, about 17 KB a row, make 3.5 MB). 16 MiB leaves room for a newer
 * server's longer messages. Anything larger is abandoned unread: buffering whatever a server
 * sends has no bound at all.
 */
export const MAX_REPLY_BYTES = 16 * 2 ** 20;
