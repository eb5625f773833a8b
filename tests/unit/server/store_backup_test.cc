// The digests store backups compare restored rows by (server/store_backup_internal.h).
#include <gtest/gtest.h>

#include "server/store_backup_internal.h"

namespace hpc::cp::backup {
namespace {

TableRows DigestOf(const std::vector<SqlRow>& rows) {
  RowDigest d;
  for (const auto& r : rows) d.Add(RowText(r));
  return d.Done("t");
}

// The same rows in another order digest alike (the engines' tools list them as they lie); a row
// changed, dropped or doubled does not.
TEST(StoreBackupDigestTest, SameRowsInAnyOrderDigestAlikeAndAnyChangeShows) {
  const std::vector<SqlRow> rows = {{"1", "ann"}, {"2", "bob"}, {"3", std::nullopt}};
  const TableRows base = DigestOf(rows);
  EXPECT_EQ(base.rows, 3);
  EXPECT_EQ(base.digest.size(), 16u);
  EXPECT_EQ(DigestOf({rows[2], rows[0], rows[1]}), base);
  EXPECT_NE(DigestOf({{"1", "ann"}, {"2", "bobb"}, {"3", std::nullopt}}).digest, base.digest);
  EXPECT_NE(DigestOf({rows[0], rows[1]}), base);
  // Doubling a row is not cancelled out (a sum, not an exclusive or).
  EXPECT_NE(DigestOf({rows[0], rows[1], rows[2], rows[1], rows[1]}).digest,
            DigestOf({rows[0], rows[1], rows[2], rows[0], rows[0]}).digest);
}

// Values are told apart however they split: NULL is not "", and "a" "bc" is not "ab" "c".
TEST(StoreBackupDigestTest, RowTextTellsValuesApart) {
  EXPECT_NE(RowText({std::nullopt}), RowText({std::string()}));
  EXPECT_NE(RowText({"a", "bc"}), RowText({"ab", "c"}));
  EXPECT_NE(RowText({"1:a;"}), RowText({"1", "a"}));
}

}  // namespace
}  // namespace hpc::cp::backup
