"""Can the image tower alone learn shape from whole hiershapes scenes? (docs/hiershapes.md)

Trains the ``tiny`` image tower supervised (a linear head, cross-entropy on the shape label) on the
one-object training scenes of a hiershapes folder, each resized whole to the model's input size as
training does, and prints its top-1 on the training scenes, on 500 held-out training scenes and on
the classification split. It isolates the tower from the text side, the loss and the batches. The
tower is the workflow config's ``model.tiny`` (``--config``), with ``--set`` overrides on top.

    python bench/shape_probe.py --data data/hiershapes [--steps 300] [--lr 1e-3] [--set conv_stem_pooled=false]
"""
from __future__ import annotations

import argparse
import io
import json
import tarfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import yaml
from PIL import Image

from argent.config import model_from
from argent.models.encoders import ImageEncoder


def to_tensor(data: bytes, size: int) -> torch.Tensor:
    image = Image.open(io.BytesIO(data)).convert("RGB").resize((size, size), Image.BICUBIC)
    return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).float() / 255


def one_object_scenes(root: Path, size: int, classes: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = [], []
    for shard in sorted((root / "train").glob("shard-*.tar")):
        with tarfile.open(shard) as tar:
            members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
        for name, data in members.items():
            if name.endswith(".json"):
                objects = json.loads(data)["scene"]["objects"]
                if len(objects) == 1:
                    images.append(to_tensor(members[name[:-5] + ".jpg"], size))
                    labels.append(classes[objects[0]["name"]])
    return torch.stack(images), torch.tensor(labels)


def classification_split(root: Path, size: int, classes: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = [], []
    for line in (root / "classification" / "class_names.tsv").read_text().splitlines():
        wnid, name = line.split("\t")
        for path in sorted((root / "classification" / wnid).glob("*.jpg")):
            images.append(to_tensor(path.read_bytes(), size))
            labels.append(classes[name])
    return torch.stack(images), torch.tensor(labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data/hiershapes"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--config", type=Path, default=Path("config/config.yaml"), help="its model.tiny is the tower")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="model.tiny override, e.g. patch_size=4")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    tiny = yaml.safe_load(args.config.read_text()).get("model", {}).get("tiny", {})
    cfg = model_from("tiny", {**tiny, **{k: yaml.safe_load(v) for k, v in (s.split("=", 1) for s in args.set)}})
    names = sorted(line.split("\t")[1] for line in (args.data / "classification" / "class_names.tsv").read_text().splitlines())
    classes = {name: i for i, name in enumerate(names)}
    x, y = one_object_scenes(args.data, cfg.image_size, classes)
    held_x, held_y, x, y = x[-500:], y[-500:], x[:-500], y[:-500]
    test_x, test_y = classification_split(args.data, cfg.image_size, classes)

    tower, head = ImageEncoder(cfg), nn.Linear(cfg.vision_width, len(classes))
    params = [*tower.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.05)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=args.steps, pct_start=0.2)
    gen, start = torch.Generator().manual_seed(0), time.process_time()
    for _ in range(args.steps):
        pick = torch.randint(len(x), (args.batch_size,), generator=gen)
        loss = nn.functional.cross_entropy(head(tower(x[pick])), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
    tower.eval()  # BatchNorm (the pooled stem) on its running statistics

    def top1(images: torch.Tensor, labels: torch.Tensor) -> float:
        with torch.no_grad():
            return round((head(tower(images)).argmax(1) == labels).float().mean().item(), 3)

    print(json.dumps({"train_scenes": len(x), "steps": args.steps, "lr": args.lr, "last_loss": round(loss.item(), 3),
                      "train_top1": top1(x[:1000], y[:1000]), "held_out_top1": top1(held_x, held_y),
                      "test_top1": top1(test_x, test_y), "cpu_s": round(time.process_time() - start, 1)}))


if __name__ == "__main__":
    main()
